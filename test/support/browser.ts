// Debian's Chromium driven by playwright-core (no browser download), started the one way the browser tests use,
// and axe-core run inside a page.
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
}

export interface AxeViolation {
  id: string;
  impact: string;
  help: string;
  nodes: { target: string[] }[];
}

/** axe-core's violations on the page as it is now (the page's context must bypass CSP so the script can load). */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.addScriptTag({ path: path.resolve(import.meta.dirname, '../../node_modules/axe-core/axe.min.js') });
  const result = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as { violations: AxeViolation[] };
  return result.violations;
}
