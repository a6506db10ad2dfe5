// Turns a catalog entry (catalog.ts) into a selector source: one call to the provider's REST API with the workspace
// credential's token, through the egress policy, the options read from the answer by path, and the provider's own
// paging carried in the selector cursor. `get` walks the pages (bounded) for the id, since the catalog names only
// the listing call.
import { DomainError, invalidInput } from '../domain/errors.ts';
import { EgressError } from '../execution/egress.ts';
import { oauthProvider } from '../credentials/providers.ts';
import type { CatalogEntry } from './catalog.ts';
import { credentialGrant, type SelectorCall, type SelectorDeps, type SelectorOption, type SelectorPage, type SelectorSource } from './source.ts';

/** Pages `get` reads looking for an id before answering null. */
const GET_MAX_PAGES = 20;

/** The value at a dotted path; `a[].b` is the `b` of each element of array `a`, joined. */
export function valueAt(obj: unknown, path: string): unknown {
  const [head, ...rest] = path.split('[].');
  let cur: unknown = obj;
  for (const part of head!.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  if (rest.length === 0) return cur;
  if (!Array.isArray(cur)) return undefined;
  return cur.map((el) => valueAt(el, rest.join('[].'))).filter((v) => v !== undefined && v !== null).join('');
}

/** Sets a dotted path, creating the objects on the way (`variables.after`). */
function setAt(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur = obj;
  for (const p of parts.slice(0, -1)) cur = (cur[p] = typeof cur[p] === 'object' && cur[p] !== null ? { ...(cur[p] as object) } : {}) as Record<string, unknown>;
  cur[parts.at(-1)!] = value;
}

/** A JSON body template with every string's `{name}` filled from the context. */
function fillBody(value: unknown, context: Record<string, string>): unknown {
  if (typeof value === 'string') return fill(value, context, false);
  if (Array.isArray(value)) return value.map((v) => fillBody(v, context));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillBody(v, context)]));
  return value;
}

/** The Authorization header: `<scheme> <token>`, or the bare token when the provider documents no scheme. */
export const authorizationOf = (entry: CatalogEntry, token: string) => (entry.authScheme === '' ? token : `${entry.authScheme ?? 'Bearer'} ${token}`);

/** `{name}` replaced by context.name (encoded for a URL path, or raw). */
export function fill(template: string, context: Record<string, string>, encode: boolean): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = context[name] ?? '';
    return encode ? encodeURIComponent(v) : v;
  });
}

const scalar = (v: unknown): string | number | boolean | null | undefined =>
  v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : undefined;

function toOption(entry: CatalogEntry, item: unknown): SelectorOption | null {
  if (entry.only && valueAt(item, entry.only) === undefined) return null;
  const id = scalar(valueAt(item, entry.id));
  if (id === undefined || id === null || id === '') return null;
  const label = entry.label.map((p) => scalar(valueAt(item, p))).find((v) => v !== undefined && v !== null && v !== '');
  const option: SelectorOption = { id: String(id), label: String(label ?? id) };
  if (entry.meta) {
    const meta: Record<string, string | number | boolean | null> = {};
    for (const [name, path] of Object.entries(entry.meta)) {
      const v = scalar(valueAt(item, path));
      if (v !== undefined) meta[name] = v;
    }
    if (Object.keys(meta).length) option.meta = meta;
  }
  return option;
}

export function restSource(deps: SelectorDeps, key: string, entry: CatalogEntry): SelectorSource {
  const names = entry.providers.map((p) => oauthProvider(p)?.name ?? p).join(' or ');
  const rootFor = (providerId: string) => {
    const configs = deps.config.oauthProviders;
    return configs[providerId]?.apiBaseUrl ?? entry.api;
  };

  /** Sends one authorized GET/POST through the egress policy and parses the JSON answer (401/403: reconnect). */
  async function send(sel: SelectorCall, url: URL, method: string, headers: Record<string, string>, body: string | undefined): Promise<unknown> {
    let res;
    try {
      res = await deps.egress.request({ url: url.href, method, headers, body, timeoutMs: 15_000, signal: sel.signal });
    } catch (e) {
      const why = e instanceof EgressError ? e.message : (e as Error).message;
      throw new DomainError('unavailable', `${names} could not be reached: ${why}`);
    }
    if (res.status === 401 || res.status === 403) {
      const why = res.status === 401 ? 'no longer accepts' : 'lacks the permission for';
      throw invalidInput(
        ['body', 'context', 'oauthCredential'],
        `${names} answered ${res.status}: it ${why} the credential ${sel.context.oauthCredential} (${key}); reconnect it with \`sim credentials reconnect\`.`,
        'credential_refused',
      );
    }
    if (res.status === 404) throw new DomainError('not_found', `${names} found nothing at ${url.pathname} (check the context of ${key}).`);
    if (res.status < 200 || res.status >= 300) throw new DomainError('unavailable', `${names} answered ${res.status} to ${key}.`);
    try {
      return JSON.parse(res.body.toString('utf8'));
    } catch {
      throw new DomainError('unavailable', `${names} answered ${res.status} with a body that is not JSON.`);
    }
  }

  /** The cloud id of the Atlassian site context.domain names, among the sites the connection was granted. */
  async function atlassianCloudId(sel: SelectorCall, root: string, token: string): Promise<string> {
    const sites = await send(sel, new URL(`${root}/oauth/token/accessible-resources`), 'GET', { authorization: `Bearer ${token}`, accept: 'application/json' }, undefined);
    const bare = (u: string) => u.trim().toLowerCase().replace(/^https?:\/\//, '').replace(/\/+$/, '');
    const list = Array.isArray(sites) ? (sites as { id?: unknown; url?: unknown }[]) : [];
    const hit = list.find((site) => typeof site.url === 'string' && bare(site.url) === bare(sel.context.domain!));
    if (!hit || typeof hit.id !== 'string') {
      const known = list.map((site) => (typeof site.url === 'string' ? bare(site.url) : null)).filter(Boolean);
      throw invalidInput(['body', 'context', 'domain'], `The credential ${sel.context.oauthCredential} cannot reach the site ${sel.context.domain}; it was granted ${known.length ? known.join(', ') : 'no site'}.`, 'unknown_site');
    }
    return hit.id;
  }

  /** One page from the provider; `after` is the provider's own continuation (token, link, offset or page). */
  async function fetchPage(sel: SelectorCall, after: string | null, limit: number): Promise<SelectorPage> {
    const { token, providerId } = await credentialGrant(deps, sel, key, entry.providers);
    const root = rootFor(providerId);
    const context = entry.site === 'atlassian' ? { ...sel.context, cloudId: await atlassianCloudId(sel, root, token) } : sel.context;
    const size = entry.size ? Math.min(limit, entry.size.max) : limit;
    let url: URL;
    const body = entry.body || entry.method === 'POST' ? (fillBody(entry.body ?? {}, context) as Record<string, unknown>) : undefined;
    if (entry.paging.kind === 'link' && after) {
      url = new URL(after);
      // A next link must stay on the provider's API: the cursor is signed, but the provider wrote it.
      if (url.origin !== new URL(root).origin) throw invalidInput(['body', 'cursor'], 'The cursor is not one this selector issued.');
    } else {
      url = new URL(root + fill(entry.path, context, true));
      for (const [k, v] of Object.entries(entry.query ?? {})) url.searchParams.set(k, fill(v, context, false));
      const put = (where: 'query' | 'body' | undefined, name: string, value: string | number) => {
        if (where === 'body' && body) setAt(body, name, value);
        else url.searchParams.set(name, String(value));
      };
      if (entry.size) put(entry.size.in, entry.size.param, size);
      const p = entry.paging;
      if (p.kind === 'token' && after) put(p.in, p.param, after);
      if (p.kind === 'offset') put(p.in, p.param, p.in === 'body' ? Number(after ?? 0) : (after ?? '0'));
      if (p.kind === 'page') put(p.in, p.param, p.in === 'body' ? Number(after ?? 1) : (after ?? '1'));
    }
    const headers: Record<string, string> = { authorization: authorizationOf(entry, token), accept: 'application/json' };
    for (const [k, v] of Object.entries(entry.headers ?? {})) headers[k] = fill(v, context, false);
    if (body) headers['content-type'] = 'application/json';
    const answer = await send(sel, url, entry.method ?? 'GET', headers, body ? JSON.stringify(body) : undefined);
    // GraphQL APIs answer 200 with `errors` and no data.
    const errors = entry.errors ? valueAt(answer, entry.errors) : undefined;
    if (Array.isArray(errors) && errors.length) {
      const first = errors[0] as { message?: unknown };
      throw new DomainError('unavailable', `${names} refused ${key}: ${typeof first?.message === 'string' ? first.message : 'an error'}.`);
    }
    const raw = valueAt(answer, entry.items);
    const items = Array.isArray(raw) ? raw : [];
    const options = items.map((i) => toOption(entry, i)).filter((o): o is SelectorOption => o !== null);
    return { options, next: nextOf(entry, answer, after, items.length, size), truncated: false };
  }

  return {
    requires: ['oauthCredential', ...(entry.requires ?? [])],
    async list(sel, page) {
      const got = await fetchPage(sel, page.after, page.limit);
      // Providers' list calls mostly cannot search: the search narrows each page.
      const needle = page.search?.trim().toLowerCase();
      const options = (needle ? got.options.filter((o) => o.label.toLowerCase().includes(needle)) : got.options).slice(0, page.limit);
      return { ...got, options };
    },
    async get(sel, id) {
      let after: string | null = null;
      for (let i = 0; i < GET_MAX_PAGES; i++) {
        const got = await fetchPage(sel, after, 100);
        const hit = got.options.find((o) => o.id === id);
        if (hit) return hit;
        if (!got.next) return null;
        after = got.next;
      }
      return null;
    },
  };
}

function nextOf(entry: CatalogEntry, answer: unknown, after: string | null, count: number, size: number): string | null {
  const p = entry.paging;
  switch (p.kind) {
    case 'none':
      return null;
    case 'token':
    case 'link': {
      if (p.kind === 'token' && p.more !== undefined && valueAt(answer, p.more) !== true) return null;
      const v = scalar(valueAt(answer, p.next));
      if (v === undefined || v === null || v === '') return null;
      if (p.kind === 'token' && p.fromLink) return new URL(String(v), 'http://link.invalid').searchParams.get(p.param) || null;
      return String(v);
    }
    case 'offset':
      return count >= size ? String(Number(after ?? 0) + count) : null;
    case 'page':
      return count >= size ? String(Number(after ?? 1) + 1) : null;
  }
}
