// Connector types: sources a knowledge base is kept in step with. A type says how it authenticates, which
// `sourceConfig` fields it takes, and lists the source's documents (external id, content hash, how to load the
// bytes). The sync that compares those lists with the base lives in sync.ts.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Store } from '../store/index.ts';
import type { BlobStore } from '../files/blob-store.ts';
import { EgressError, type EgressPolicy } from '../execution/egress.ts';
import { essence, folderPathOf, NameError } from '../files/names.ts';
import { fileWebUrl } from '../files/views.ts';
import { invalidInput } from '../domain/errors.ts';
import { documentFormat } from './extract.ts';

export interface ExternalDocument {
  externalId: string;
  filename: string;
  mimeType: string;
  sourceUrl: string | null;
  contentHash: string;
  size: number;
  /** Puts the bytes in the blob store (if they are not there already) and names them. */
  load(): Promise<{ blobKey: string; size: number }>;
}

/** A document the source lists but that could not be read this time. */
export interface ExternalFailure {
  externalId: string;
  error: string;
}

export interface ConnectorContext {
  store: Store;
  blobs: BlobStore;
  egress: EgressPolicy;
  workspaceId: string;
  baseUrl: string;
  maxDocumentBytes: number;
  timeoutMs: number;
  /** The connector's API key (resolved), or null. */
  apiKey: string | null;
}

/** The source itself could not be listed (unreachable, refused by the egress policy, malformed). */
export class SourceError extends Error {}

type ConfigField = {
  id: string;
  title: string;
  type: 'short-input' | 'dropdown' | 'selector';
  placeholder?: string;
  required?: boolean;
  description?: string;
  options?: { id: string; label: string }[];
  mode?: 'basic' | 'advanced';
};

export interface ConnectorType {
  connectorType: string;
  name: string;
  description: string;
  version: string;
  auth: { mode: 'apiKey'; label?: string; placeholder?: string; optional: boolean };
  /** Whether the type uses an API key at all (optional ones may still be given one). */
  acceptsApiKey: boolean;
  configFields: ConfigField[];
  supportsIncrementalSync: boolean;
  tagDefinitions: { id: string; displayName: string; fieldType: 'text' | 'number' | 'date' | 'boolean' }[];
  /** Checks and normalizes `sourceConfig` (a 400 on `field` when it is not usable). */
  validate(config: Record<string, unknown>, field: (string | number)[]): Record<string, unknown>;
  list(config: Record<string, unknown>, ctx: ConnectorContext): Promise<(ExternalDocument | ExternalFailure)[]>;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function unknownKeys(config: Record<string, unknown>, allowed: string[], field: (string | number)[]): void {
  const extra = Object.keys(config).find((k) => !allowed.includes(k));
  if (extra) throw invalidInput([...field, extra], `Unknown sourceConfig field "${extra}"; this connector takes ${allowed.join(', ')}.`);
}

const workspaceFiles: ConnectorType = {
  connectorType: 'workspace-files',
  name: 'Workspace files',
  description: 'Keeps the knowledge base in step with a folder of this workspace’s files.',
  version: '1.0.0',
  auth: { mode: 'apiKey', label: 'No key needed', optional: true },
  acceptsApiKey: false,
  configFields: [
    { id: 'folderPath', title: 'Folder', type: 'short-input', placeholder: '/docs', required: true, description: 'Workspace files folder to index (`/` for every file).' },
    {
      id: 'recursive', title: 'Include subfolders', type: 'dropdown', required: false, description: 'Also index the files of every folder below it (default true).',
      options: [{ id: 'true', label: 'Yes' }, { id: 'false', label: 'No' }],
    },
  ],
  supportsIncrementalSync: false,
  tagDefinitions: [],
  validate(config, field) {
    unknownKeys(config, ['folderPath', 'recursive'], field);
    if (typeof config.folderPath !== 'string') throw invalidInput([...field, 'folderPath'], 'folderPath is required: the workspace files folder to index.');
    let folderPath: string;
    try {
      folderPath = folderPathOf(config.folderPath);
    } catch (err) {
      if (err instanceof NameError) throw invalidInput([...field, 'folderPath'], err.message);
      throw err;
    }
    const recursive = config.recursive === undefined ? true : config.recursive === true || config.recursive === 'true';
    if (config.recursive !== undefined && ![true, false, 'true', 'false'].includes(config.recursive as never)) throw invalidInput([...field, 'recursive'], 'recursive is true or false.');
    return { folderPath, recursive };
  },
  async list(config, ctx) {
    const folderPath = config.folderPath as string;
    if (folderPath !== '/' && !(await ctx.store.fileFolders.getActive(ctx.workspaceId, folderPath))) throw new SourceError(`The workspace folder ${folderPath} does not exist.`);
    const files = (await ctx.store.files.activeUnder(ctx.workspaceId, folderPath)).filter((f) => config.recursive !== false || f.folderPath === folderPath);
    return files
      .filter((f) => f.size <= ctx.maxDocumentBytes && documentFormat(f.contentType, f.name))
      .map((f) => ({
        externalId: f.id,
        filename: f.name,
        mimeType: f.contentType,
        sourceUrl: fileWebUrl(ctx.baseUrl, f),
        contentHash: f.blobKey,
        size: f.size,
        load: async () => ({ blobKey: f.blobKey, size: f.size }),
      }));
  },
};

const MAX_PAGES = 500;

const webPages: ConnectorType = {
  connectorType: 'web',
  name: 'Web pages',
  description: 'Fetches a list of pages, or the pages a sitemap lists, under the server’s egress policy.',
  version: '1.0.0',
  auth: { mode: 'apiKey', label: 'No key needed', optional: true },
  acceptsApiKey: false,
  configFields: [
    { id: 'urls', title: 'Page URLs', type: 'short-input', placeholder: 'https://example.com/a, https://example.com/b', required: false, description: 'Pages to index, separated by commas or new lines.' },
    { id: 'sitemapUrl', title: 'Sitemap URL', type: 'short-input', placeholder: 'https://example.com/sitemap.xml', required: false, description: 'A sitemap whose <loc> pages are indexed.' },
    { id: 'maxPages', title: 'Most pages', type: 'short-input', placeholder: '100', required: false, mode: 'advanced', description: `At most this many pages (1–${MAX_PAGES}, default 100).` },
  ],
  supportsIncrementalSync: false,
  tagDefinitions: [],
  validate(config, field) {
    unknownKeys(config, ['urls', 'sitemapUrl', 'maxPages'], field);
    const raw = config.urls;
    const urls = (Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(/[\s,]+/) : raw === undefined ? [] : null)?.filter((u) => u !== '');
    if (urls === null || urls === undefined || urls.some((u) => typeof u !== 'string')) throw invalidInput([...field, 'urls'], 'urls is a list of page URLs.');
    const checkUrl = (u: string, at: (string | number)[]) => {
      try {
        const url = new URL(u);
        if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error();
        return url.toString();
      } catch {
        throw invalidInput(at, `${u} is not an http(s) URL.`);
      }
    };
    const pages = (urls as string[]).map((u, i) => checkUrl(u, [...field, 'urls', i]));
    const sitemapUrl = config.sitemapUrl === undefined ? null : typeof config.sitemapUrl === 'string' ? checkUrl(config.sitemapUrl, [...field, 'sitemapUrl']) : null;
    if (config.sitemapUrl !== undefined && sitemapUrl === null) throw invalidInput([...field, 'sitemapUrl'], 'sitemapUrl is a URL.');
    if (pages.length === 0 && !sitemapUrl) throw invalidInput(field, 'Give urls, a sitemapUrl, or both.');
    const maxPages = config.maxPages === undefined ? 100 : Number(config.maxPages);
    if (!Number.isInteger(maxPages) || maxPages < 1 || maxPages > MAX_PAGES) throw invalidInput([...field, 'maxPages'], `maxPages is a whole number from 1 to ${MAX_PAGES}.`);
    if (pages.length > maxPages) throw invalidInput([...field, 'urls'], `At most ${maxPages} pages.`);
    return { urls: pages, sitemapUrl, maxPages };
  },
  async list(config, ctx) {
    const fetchPage = (url: string) => ctx.egress.request({ url, timeoutMs: ctx.timeoutMs, headers: { 'user-agent': 'open-workspace-automation knowledge connector' } });
    const pages = [...(config.urls as string[])];
    if (config.sitemapUrl) {
      let res;
      try {
        res = await fetchPage(config.sitemapUrl as string);
      } catch (err) {
        throw new SourceError(`The sitemap ${config.sitemapUrl} could not be fetched: ${(err as Error).message}`);
      }
      if (res.status >= 400) throw new SourceError(`The sitemap ${config.sitemapUrl} answered ${res.status}.`);
      for (const m of res.body.toString('utf8').matchAll(/<loc>\s*([^<\s]+)\s*<\/loc>/g)) pages.push(m[1]!.replace(/&amp;/g, '&'));
    }
    const unique = [...new Set(pages)].slice(0, config.maxPages as number);
    const out: (ExternalDocument | ExternalFailure)[] = [];
    for (const url of unique) {
      try {
        const res = await fetchPage(url);
        if (res.status >= 400) {
          out.push({ externalId: url, error: `${url} answered ${res.status}.` });
          continue;
        }
        const mimeType = essence(res.headers['content-type'] ?? 'text/html') || 'text/html';
        const path = new URL(url).pathname.split('/').filter(Boolean).at(-1);
        const filename = (path && /\.[a-z0-9]+$/i.test(path) ? path : `${new URL(url).hostname}${path ? `-${path}` : ''}.html`).slice(0, 200);
        if (!documentFormat(mimeType, mimeType === 'text/html' ? `${filename}.html` : filename)) {
          out.push({ externalId: url, error: `${url} is ${mimeType}, which cannot be indexed.` });
          continue;
        }
        const body = res.body;
        out.push({
          externalId: url,
          filename,
          mimeType,
          sourceUrl: url,
          contentHash: sha256(body),
          size: body.length,
          load: async () => {
            const blob = await ctx.blobs.write(Readable.from([body]), { expectedSize: body.length });
            return { blobKey: blob.key, size: blob.size };
          },
        });
      } catch (err) {
        out.push({ externalId: url, error: err instanceof EgressError ? `${url}: ${err.message}` : `${url} could not be fetched: ${(err as Error).message}` });
      }
    }
    if (unique.length > 0 && out.every((d) => 'error' in d)) {
      throw new SourceError(`No page could be fetched: ${(out[0] as ExternalFailure).error}`);
    }
    return out;
  },
};


/**
 * A GitHub repository's text files (Markdown, plain text, reStructuredText, HTML by default), read through the
 * REST API: the repository (for its default branch and web address), its git tree, and each blob as raw bytes.
 * The blob's git SHA is the content hash, so unchanged files are not fetched again. A token is optional (public
 * repositories); `apiUrl` points at GitHub Enterprise Server.
 */
const github: ConnectorType = {
  connectorType: 'github',
  name: 'GitHub',
  description: 'Indexes the text files of a GitHub repository (a branch, optionally under one path).',
  version: '1.0.0',
  auth: { mode: 'apiKey', label: 'Personal access token (needed for private repositories)', placeholder: 'github_pat_…', optional: true },
  acceptsApiKey: true,
  configFields: [
    { id: 'repository', title: 'Repository', type: 'short-input', placeholder: 'owner/name', required: true },
    { id: 'branch', title: 'Branch', type: 'short-input', placeholder: 'main', required: false, description: 'Defaults to the repository’s default branch.' },
    { id: 'pathPrefix', title: 'Path', type: 'short-input', placeholder: 'docs/', required: false, description: 'Only files under this path.' },
    { id: 'extensions', title: 'File extensions', type: 'short-input', placeholder: 'md,mdx,txt,rst,html', required: false, mode: 'advanced' },
    { id: 'apiUrl', title: 'API URL', type: 'short-input', placeholder: 'https://api.github.com', required: false, mode: 'advanced', description: 'For GitHub Enterprise Server.' },
  ],
  supportsIncrementalSync: false,
  tagDefinitions: [],
  validate(config, field) {
    unknownKeys(config, ['repository', 'branch', 'pathPrefix', 'extensions', 'apiUrl'], field);
    if (typeof config.repository !== 'string' || !/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(config.repository)) {
      throw invalidInput([...field, 'repository'], 'repository is owner/name.');
    }
    const str = (k: string) => {
      const v = config[k];
      if (v !== undefined && (typeof v !== 'string' || v.length > 500)) throw invalidInput([...field, k], `${k} is a string.`);
      return v as string | undefined;
    };
    const apiUrl = (str('apiUrl') ?? 'https://api.github.com').replace(/\/+$/, '');
    try {
      const u = new URL(apiUrl);
      if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error();
    } catch {
      throw invalidInput([...field, 'apiUrl'], 'apiUrl is an http(s) URL.');
    }
    const extensions = (str('extensions') ?? 'md,mdx,txt,rst,html').split(',').map((e) => e.trim().replace(/^\./, '').toLowerCase()).filter(Boolean);
    return { repository: config.repository, branch: str('branch') ?? null, pathPrefix: (str('pathPrefix') ?? '').replace(/^\/+/, ''), extensions, apiUrl };
  },
  async list(config, ctx) {
    const api = config.apiUrl as string;
    const repo = config.repository as string;
    const headers: Record<string, string> = { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28', 'user-agent': 'open-workspace-automation' };
    if (ctx.apiKey) headers.authorization = `Bearer ${ctx.apiKey}`;
    const getJson = async (url: string): Promise<any> => {
      let res;
      try {
        res = await ctx.egress.request({ url, headers, timeoutMs: ctx.timeoutMs });
      } catch (err) {
        throw new SourceError(`GitHub could not be reached: ${(err as Error).message}`);
      }
      if (res.status === 401 || res.status === 403) throw new SourceError(`GitHub refused access to ${repo} (${res.status}); check the token.`);
      if (res.status === 404) throw new SourceError(`GitHub has no repository ${repo} visible to this token.`);
      if (res.status >= 400) throw new SourceError(`GitHub answered ${res.status} for ${url}.`);
      try {
        return JSON.parse(res.body.toString('utf8'));
      } catch {
        throw new SourceError('GitHub answered something that is not JSON.');
      }
    };
    const info = await getJson(`${api}/repos/${repo}`);
    const branch = (config.branch as string | null) ?? String(info.default_branch ?? 'main');
    const tree = await getJson(`${api}/repos/${repo}/git/trees/${encodeURIComponent(branch)}?recursive=1`);
    if (!Array.isArray(tree.tree)) throw new SourceError('GitHub answered a tree without entries.');
    const exts = new Set(config.extensions as string[]);
    const prefix = config.pathPrefix as string;
    const web = String(info.html_url ?? `https://github.com/${repo}`);
    return (tree.tree as { path: string; type: string; sha: string; size?: number }[])
      .filter((e) => e.type === 'blob' && e.path.startsWith(prefix) && exts.has(e.path.split('.').pop()!.toLowerCase()) && (e.size ?? 0) <= ctx.maxDocumentBytes)
      .map((e) => {
        const filename = e.path.split('/').pop()!;
        const mimeType = /\.html?$/i.test(filename) ? 'text/html' : /\.mdx?$/i.test(filename) ? 'text/markdown' : 'text/plain';
        return {
          externalId: e.path,
          filename,
          mimeType,
          sourceUrl: `${web}/blob/${encodeURIComponent(branch)}/${e.path.split('/').map(encodeURIComponent).join('/')}`,
          contentHash: e.sha,
          size: e.size ?? 0,
          load: async () => {
            const res = await ctx.egress.request({ url: `${api}/repos/${repo}/git/blobs/${e.sha}`, headers: { ...headers, accept: 'application/vnd.github.raw' }, timeoutMs: ctx.timeoutMs });
            if (res.status >= 400) throw new SourceError(`GitHub answered ${res.status} for ${e.path}.`);
            const blob = await ctx.blobs.write(Readable.from([res.body]), { expectedSize: res.body.length });
            return { blobKey: blob.key, size: blob.size };
          },
        };
      });
  },
};

/** The connector types this server can run. */
export const CONNECTOR_TYPES: ConnectorType[] = [github, workspaceFiles, webPages];
export const connectorType = (id: string) => CONNECTOR_TYPES.find((t) => t.connectorType === id);
