// A real browser (Debian's Chromium, driven by playwright-core) uses a password-protected hosted chat: it passes
// the gate, sends a message, watches the answer stream in block by block, reloads and finds the conversation.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser } from 'playwright-core';
import { axeViolations, CHROMIUM_PATH, launchChromium } from './support/browser.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { setUserPassword } from '../src/identity/web-session.ts';
import { PATIENCE_MS } from './support/wait.ts';

const OUTPUT = path.resolve(import.meta.dirname, '../test-output');
const PASSWORD = 'a password for the browser test';
const haveChromium = fs.existsSync(CHROMIUM_PATH);

let s: TestServer;
let browser: Browser;

beforeAll(async () => {
  if (!haveChromium) return;
  s = await startTestServer();
  const start = apiBlock('start_trigger', 'Start');
  const first = apiBlock('function', 'First', { code: 'return "Thinking about: " + <start.input>' });
  const hidden = apiBlock('function', 'Hidden', { code: 'const t = Date.now(); while (Date.now() - t < 700) {} return "internal scratch"' });
  const second = apiBlock('function', 'Second', { code: 'return "Answer #" + String(<start.conversationId>).length + ": " + <start.input>.toUpperCase()' });
  const wf = await buildWorkflow(s, 'Browser bot', [start, first, hidden, second], [link(start, first), link(first, hidden), link(hidden, second)]);
  const r = await s.call('PUT', `/api/v2/workflows/${wf.id}/deployments/chat`, {
    identifier: 'browser-bot',
    title: 'Browser Bot',
    description: 'A chat driven by a real browser',
    customizations: { primaryColor: '#0f766e', welcomeMessage: 'Welcome! Ask me anything.' },
    authType: 'password',
    password: PASSWORD,
    outputConfigs: [
      { blockId: wf.ids.First!, path: 'result' },
      { blockId: wf.ids.Second!, path: 'result' },
    ],
  });
  expect(r.status, r.text).toBe(200);
  const sso = await buildWorkflow(s, 'Members bot', [apiBlock('start_trigger', 'Start')], []);
  const r2 = await s.call('PUT', `/api/v2/workflows/${sso.id}/deployments/chat`, {
    identifier: 'members',
    title: 'Members only',
    customizations: { welcomeMessage: 'Hello, member.' },
    authType: 'sso',
    allowedEmails: ['@example.com', (await s.services.store.users.get(s.userId))!.email],
  });
  expect(r2.status, r2.text).toBe(200);
  await setUserPassword(s.services.store, s.userId, 'browser sign-in password');
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

describe.skipIf(!haveChromium)('hosted chat in Chromium', () => {
  it('has no accessibility violations (axe-core) on the gate, the conversation and the sign-in page', async () => {
    // CSP is bypassed only so the test can inject axe-core; the pages themselves are unchanged.
    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    const audit = async (where: string) => {
      expect((await axeViolations(page)).map((v) => `${where}: ${v.id} [${v.impact}] (${v.help})`)).toEqual([]);
    };
    await page.goto(`${s.url}/chat/browser-bot`);
    await page.getByLabel('Password').waitFor();
    await audit('password gate');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('Welcome! Ask me anything.').waitFor();
    await audit('conversation');
    await page.goto(`${s.url}/login`);
    await audit('sign-in page');
    await context.close();
  });

  it('passes the password gate, streams the answer and keeps the conversation across a reload', async () => {
    const context = await browser.newContext({ viewport: { width: 900, height: 720 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    // CSP violations and failed loads show up as console errors (the wrong password's 401 is expected).
    page.on('console', (m) => {
      if (m.type() === 'error' && !/401/.test(m.text())) errors.push(m.text());
    });
    await page.goto(`${s.url}/chat/browser-bot`);
    await expect(page.title()).resolves.toBe('Browser Bot');

    // The gate: a wrong password is refused, the right one opens the chat.
    const password = page.getByLabel('Password');
    await password.fill('definitely not the right one');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('That password is not correct.').waitFor();
    // Behind the gate there is no composer.
    expect(await page.locator('#composer').isVisible()).toBe(false);
    expect(await page.locator('#conversation').isVisible()).toBe(false);
    fs.mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT, 'chat-gate.png') });
    await password.fill(PASSWORD);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('Welcome! Ask me anything.').waitFor();
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name.startsWith('chat_auth_'))).toMatchObject({ httpOnly: true, sameSite: 'Lax' });

    // Record how the reply grows, to see it stream in block by block.
    // (Strings, so the type check needs no DOM library: they run in the page.)
    await page.evaluate(`(() => {
      const seen = [];
      window.__seen = seen;
      new MutationObserver(() => {
        const last = document.querySelector('#messages li.assistant:last-child .content');
        if (last && last.textContent && seen[seen.length - 1] !== last.textContent) seen.push(last.textContent);
      }).observe(document.getElementById('messages'), { subtree: true, childList: true, characterData: true });
    })()`);
    await page.getByLabel('Your message').fill('hello browser');
    await page.getByRole('button', { name: 'Send' }).click();
    const reply = page.locator('#messages li.assistant').last();
    await reply.getByText(/Answer #\d+: HELLO BROWSER/).waitFor({ timeout: PATIENCE_MS });
    await page.locator('#messages li.pending').waitFor({ state: 'detached' });
    const seen = (await page.evaluate('window.__seen')) as string[];
    expect(seen[0]).toBe('Thinking about: hello browser');
    expect(seen.at(-1)).toMatch(/^Thinking about: hello browser\n\nAnswer #36: HELLO BROWSER$/);
    expect(await page.locator('#messages').textContent()).not.toContain('internal scratch');

    // A reload keeps the conversation (and the same conversation id).
    await page.reload();
    await page.getByText('Welcome! Ask me anything.').waitFor();
    await page.locator('#messages li.user', { hasText: 'hello browser' }).waitFor();
    await page.locator('#messages li.assistant', { hasText: 'HELLO BROWSER' }).waitFor();
    await page.getByLabel('Your message').fill('second question');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('#messages li.assistant', { hasText: 'Answer #36: SECOND QUESTION' }).waitFor({ timeout: PATIENCE_MS });
    const stored = (await page.evaluate(`JSON.parse(localStorage.getItem('owa-chat:browser-bot'))`)) as any;
    expect(stored.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);

    fs.mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT, 'chat-browser.png'), fullPage: true });
    // A narrow (phone) viewport lays out too.
    await page.setViewportSize({ width: 380, height: 720 });
    await page.screenshot({ path: path.join(OUTPUT, 'chat-browser-narrow.png'), fullPage: true });
    expect(errors).toEqual([]);
    await context.close();
  });

  it('lets a signed-in member into an sso chat through the sign-in page', async () => {
    const context = await browser.newContext({ viewport: { width: 900, height: 720 } });
    const page = await context.newPage();
    await page.goto(`${s.url}/chat/members`);
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.waitForURL(/\/login\?next=/);
    const email = (await s.services.store.users.get(s.userId))!.email;
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('is not correct').waitFor();
    await page.getByLabel('Password').fill('browser sign-in password');
    fs.mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT, 'sign-in.png') });
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${s.url}/chat/members`);
    await page.getByText('Hello, member.').waitFor();
    const session = (await context.cookies()).find((c) => c.name === 'owa_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });

    // The CLI's consent page, as the browser shows it to the same signed-in user.
    const q = new URLSearchParams({
      client_id: 'sim-cli',
      response_type: 'code',
      redirect_uri: 'http://127.0.0.1:45000/callback',
      scope: 'offline_access api:read',
      code_challenge: 'a'.repeat(43),
      code_challenge_method: 'S256',
      state: 's',
    });
    await page.goto(`${s.url}/api/auth/oauth2/authorize?${q}`);
    await page.getByRole('heading', { name: 'Allow Sim CLI to use your account?' }).waitFor();
    await page.screenshot({ path: path.join(OUTPUT, 'consent.png') });
    await context.close();
  });
});
