// The enrichment provider registry. An enrichment (e.g. `company-domain`) has inputs it reads and outputs it
// fills, and a cascade of providers tried in order until one matches. A provider is configured when its
// endpoint is set (ENRICHMENT_<ID>_URL, optional ENRICHMENT_<ID>_API_KEY); an unconfigured provider reports
// `skipped` and never a made-up value. Calls go through the egress policy.
import type { EgressPolicy } from '../execution/egress.ts';

export type ProviderStatus = 'matched' | 'no_match' | 'skipped' | 'error' | 'not_run';

export interface EnrichmentDef {
  id: string;
  label: string;
  inputs: string[];
  outputs: string[];
  providers: string[];
}

export const ENRICHMENTS: readonly EnrichmentDef[] = [
  { id: 'work-email', label: 'Work email', inputs: ['fullName', 'companyDomain'], outputs: ['email'], providers: ['hunter', 'findymail', 'prospeo', 'leadmagic'] },
  { id: 'email-verification', label: 'Email verification', inputs: ['email'], outputs: ['status', 'deliverable'], providers: ['zerobounce', 'neverbounce', 'millionverifier'] },
  { id: 'linkedin-profile', label: 'LinkedIn profile', inputs: ['fullName', 'companyDomain'], outputs: ['linkedinUrl'], providers: ['prospeo', 'wiza', 'pdl'] },
  { id: 'phone-number', label: 'Phone number', inputs: ['linkedinUrl'], outputs: ['phone'], providers: ['wiza', 'datagma', 'enrow'] },
  { id: 'company-domain', label: 'Company domain', inputs: ['companyName'], outputs: ['domain'], providers: ['hunter', 'pdl'] },
  { id: 'company-info', label: 'Company info', inputs: ['companyDomain'], outputs: ['name', 'industry', 'employees'], providers: ['pdl', 'leadmagic'] },
];

export const getEnrichment = (id: string): EnrichmentDef | undefined => ENRICHMENTS.find((e) => e.id === id);

export interface ProviderConfig {
  url: string | null;
  apiKey: string | null;
}

/** The configured providers (from the server's configuration), keyed by upper-case id. */
export type ProviderSettings = Record<string, { url: string; apiKey: string | null }>;

/** A provider's endpoint settings. */
export function providerConfig(providerId: string, settings: ProviderSettings): ProviderConfig {
  const p = settings[providerId.toUpperCase().replace(/[^A-Z0-9]/g, '_')];
  return { url: p?.url ?? null, apiKey: p?.apiKey ?? null };
}

export interface ProviderResult {
  id: string;
  label: string;
  toolId: string;
  status: ProviderStatus;
  cost: number;
  durationMs: number;
  error: string | null;
}

export interface Cascade {
  startedAt: string | null;
  completedAt: string | null;
  durationMs: number;
  totalCost: number;
  matchedProvider: string | null;
  aborted: boolean;
  providers: ProviderResult[];
}

export interface CascadeOutcome {
  cascade: Cascade;
  outputs: Record<string, unknown> | null;
}

/**
 * Runs the cascade: each configured provider gets `POST {url}` with `{enrichmentId, input}` and answers
 * `{matched: boolean, outputs?: {...}, cost?: number}`; the first match wins and later providers are `not_run`.
 */
export async function runCascade(def: EnrichmentDef, input: Record<string, unknown>, egress: EgressPolicy, timeoutMs: number, settings: ProviderSettings): Promise<CascadeOutcome> {
  const started = Date.now();
  const providers: ProviderResult[] = [];
  let outputs: Record<string, unknown> | null = null;
  let matched: string | null = null;
  let totalCost = 0;
  for (const id of def.providers) {
    const base = { id, label: id, toolId: `${id}_${def.id.replace(/-/g, '_')}`, cost: 0, durationMs: 0, error: null };
    if (matched) {
      providers.push({ ...base, status: 'not_run' });
      continue;
    }
    const cfg = providerConfig(id, settings);
    if (!cfg.url) {
      providers.push({ ...base, status: 'skipped', error: `Provider "${id}" is not configured (set ENRICHMENT_${id.toUpperCase()}_URL).` });
      continue;
    }
    const t0 = Date.now();
    try {
      const res = await egress.request({
        url: cfg.url, method: 'POST', timeoutMs,
        headers: { 'content-type': 'application/json', ...(cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {}) },
        body: JSON.stringify({ enrichmentId: def.id, input }),
      });
      if (res.status < 200 || res.status >= 300) throw new Error(`Provider answered HTTP ${res.status}.`);
      const reply = JSON.parse(res.body.toString('utf8')) as { matched?: unknown; outputs?: unknown; cost?: unknown };
      const cost = typeof reply.cost === 'number' && Number.isFinite(reply.cost) ? reply.cost : 0;
      totalCost += cost;
      const ok = reply.matched === true && reply.outputs !== null && typeof reply.outputs === 'object';
      providers.push({ ...base, status: ok ? 'matched' : 'no_match', cost, durationMs: Date.now() - t0 });
      if (ok) {
        matched = id;
        outputs = reply.outputs as Record<string, unknown>;
      }
    } catch (err) {
      providers.push({ ...base, status: 'error', durationMs: Date.now() - t0, error: (err as Error).message });
    }
  }
  return {
    outputs,
    cascade: { startedAt: new Date(started).toISOString(), completedAt: new Date().toISOString(), durationMs: Date.now() - started, totalCost, matchedProvider: matched, aborted: false, providers },
  };
}
