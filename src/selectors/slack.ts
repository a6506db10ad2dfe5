// Slack selectors: the channels and users an OAuth connection to Slack can see, from Slack's Web API
// (https://slack.com/api, or OAUTH_SLACK_API_BASE_URL), called through the egress policy with the credential's token.
import { DomainError, invalidInput } from '../domain/errors.ts';
import { EgressError } from '../execution/egress.ts';
import { credentialToken, type SelectorCall, type SelectorDeps, type SelectorOption, type SelectorSource } from './source.ts';

const SLACK_API = 'https://slack.com/api';
/** Slack answers these when the token itself is the problem: the person must reconnect, retrying will not help. */
const TOKEN_ERRORS = new Set(['invalid_auth', 'not_authed', 'token_revoked', 'token_expired', 'account_inactive', 'missing_scope']);
/** Slack answers these from an `info` call for an id it does not know (or the token cannot see). */
const UNKNOWN_ID = new Set(['channel_not_found', 'user_not_found', 'users_not_found']);

type SlackBody = Record<string, unknown> & { ok?: boolean; error?: string };

export function slackSources(deps: SelectorDeps): Record<string, SelectorSource> {
  const base = () => deps.config.oauthProviders.slack?.apiBaseUrl ?? SLACK_API;

  async function call(sel: SelectorCall, key: string, method: string, params: Record<string, string>): Promise<SlackBody> {
    const token = await credentialToken(deps, sel, key, ['slack']);
    const url = new URL(`${base()}/${method}`);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    let res;
    try {
      res = await deps.egress.request({ url: url.href, method: 'GET', headers: { authorization: `Bearer ${token}`, accept: 'application/json' }, timeoutMs: 15_000, signal: sel.signal });
    } catch (e) {
      const why = e instanceof EgressError ? e.message : (e as Error).message;
      throw new DomainError('unavailable', `Slack could not be reached: ${why}`);
    }
    let body: SlackBody;
    try {
      body = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw new DomainError('unavailable', `Slack answered ${res.status} with a body that is not JSON.`);
    }
    if (body.ok === true) return body;
    const error = typeof body.error === 'string' ? body.error : `status ${res.status}`;
    if (TOKEN_ERRORS.has(error)) {
      throw invalidInput(['body', 'context', 'oauthCredential'], `Slack refused the credential ${sel.context.oauthCredential} (${error}); reconnect it with \`sim credentials reconnect\`.`, 'credential_refused');
    }
    if (UNKNOWN_ID.has(error)) return body;
    throw new DomainError('unavailable', `Slack refused ${method}: ${error}`);
  }

  /** A Slack list method paged by `cursor`; the search narrows each page (Slack's list methods cannot search). */
  function listing(key: string, method: string, field: string, params: Record<string, string>, toOption: (item: Record<string, unknown>) => SelectorOption | null): SelectorSource['list'] {
    return async (sel, page) => {
      const body = await call(sel, key, method, { ...params, limit: String(page.limit), ...(page.after ? { cursor: page.after } : {}) });
      const items = Array.isArray(body[field]) ? (body[field] as Record<string, unknown>[]) : [];
      const needle = page.search?.trim().toLowerCase();
      const options = items
        .map(toOption)
        .filter((o): o is SelectorOption => o !== null && (!needle || o.label.toLowerCase().includes(needle)))
        .slice(0, page.limit);
      const meta = body.response_metadata as { next_cursor?: string } | undefined;
      return { options, next: meta?.next_cursor ? meta.next_cursor : null, truncated: false };
    };
  }

  const channel = (c: Record<string, unknown>): SelectorOption | null =>
    typeof c.id === 'string' && typeof c.name === 'string' ? { id: c.id, label: `#${c.name}`, meta: { private: c.is_private === true, archived: c.is_archived === true } } : null;
  const user = (u: Record<string, unknown>): SelectorOption | null => {
    if (typeof u.id !== 'string' || u.deleted === true) return null;
    const profile = (u.profile ?? {}) as Record<string, unknown>;
    const name = [u.real_name, profile.real_name, u.name].find((v) => typeof v === 'string' && v) as string | undefined;
    return { id: u.id, label: name ?? u.id, meta: { handle: typeof u.name === 'string' ? u.name : null, bot: u.is_bot === true } };
  };

  const channels: SelectorSource = {
    requires: ['oauthCredential'],
    list: listing('slack.channels', 'conversations.list', 'channels', { types: 'public_channel,private_channel', exclude_archived: 'true' }, channel),
    async get(sel, id) {
      const body = await call(sel, 'slack.channels', 'conversations.info', { channel: id });
      return body.ok === true && body.channel ? channel(body.channel as Record<string, unknown>) : null;
    },
  };
  const users: SelectorSource = {
    requires: ['oauthCredential'],
    list: listing('slack.users', 'users.list', 'members', {}, user),
    async get(sel, id) {
      const body = await call(sel, 'slack.users', 'users.info', { user: id });
      return body.ok === true && body.user ? user(body.user as Record<string, unknown>) : null;
    },
  };
  return { 'slack.channels': channels, 'slack.users': users };
}
