// The web console: the pages every `webUrl` the API returns leads to. Each route answers a small HTML shell for
// a signed-in member of the workspace; /_web/console.js then reads and changes everything through the public v2
// API with the session cookie (and the CSRF token in a meta tag for changes), so the API's one policy decides
// what the page may do. The role shown here only hides controls; the API refuses a reader's writes either way.
import express, { type Request, type Response, type Router } from 'express';
import type { Services } from '../../services.ts';
import { SESSION_COOKIE, sessionPrincipal, sessionUser } from '../../identity/web-session.ts';
import { workspaceAccess } from '../../identity/access.ts';
import { roleAtLeast } from '../../identity/principal.ts';
import { readCookie } from './cookies.ts';
import { csrfToken } from './csrf.ts';
import { escapeHtml as h, htmlPage } from './common.ts';
import { WEB_ASSETS } from './chat-routes.ts';

/** The console's pages: `page` names what console.js draws, the path's parameters become data attributes. */
const PAGES: { path: string; page: string; title: string }[] = [
  { path: '/workspace/:workspaceId', page: 'home', title: 'Workspace' },
  { path: '/workspace/:workspaceId/w/:workflowId', page: 'workflow', title: 'Workflow' },
  { path: '/workspace/:workspaceId/w/:workflowId/runs/:runId', page: 'run', title: 'Run' },
  { path: '/workspace/:workspaceId/tables/:tableId', page: 'table', title: 'Table' },
  { path: '/workspace/:workspaceId/knowledge/:knowledgeBaseId', page: 'knowledge', title: 'Knowledge base' },
  { path: '/workspace/:workspaceId/files/:fileId', page: 'file', title: 'File' },
  { path: '/workspace/:workspaceId/operations', page: 'operations', title: 'Operations' },
];

const ID = /^[A-Za-z0-9_.:-]{1,200}$/;

export function consoleRoutes(services: Services): Router {
  const router = express.Router();
  const { store, signingKey } = services;

  function shell(req: Request, res: Response, status: number, o: { title: string; page: string; email: string; data: Record<string, string>; workspaceName?: string }) {
    const attrs = Object.entries({ page: o.page, ...o.data })
      .map(([k, v]) => `data-${k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())}="${h(v)}"`)
      .join(' ');
    const csrf = csrfToken(services, req, res);
    const ws = o.data.workspaceId;
    htmlPage(res, status, {
      title: `${o.title} · Console`,
      assets: WEB_ASSETS,
      script: 'console/main.js',
      module: true,
      bodyAttrs: `class="console" ${attrs} data-csrf="${h(csrf)}"`,
      body: `<a class="skip" href="#main">Skip to content</a>
<header class="console-header">
<nav aria-label="Console">
<a href="/workspace" class="brand">Console</a>
${ws ? `<a href="/workspace/${h(encodeURIComponent(ws))}" id="nav-workspace">${h(o.workspaceName ?? 'Workspace')}</a>
<a href="/workspace/${h(encodeURIComponent(ws))}/operations">Operations</a>` : ''}
</nav>
<div class="who"><span>${h(o.email)}</span>${o.data.role ? ` <span class="role">${h(o.data.role)}</span>` : ''}
<form method="post" action="/logout"><input type="hidden" name="csrf" value="${h(csrf)}"><button type="submit" class="secondary small">Sign out</button></form></div>
</header>
<main id="main" tabindex="-1"><p class="status" role="status">Loading…</p></main>
<noscript><p>The console needs JavaScript.</p></noscript>`,
    });
  }

  router.get('/workspace', async (req, res, next) => {
    try {
      const user = await sessionUser(store, signingKey, readCookie(req, SESSION_COOKIE));
      if (!user) return res.redirect(303, `/login?next=${encodeURIComponent(req.originalUrl)}`);
      shell(req, res, 200, { title: 'Workspaces', page: 'workspaces', email: user.email, data: {} });
    } catch (err) {
      next(err);
    }
  });

  for (const p of PAGES) {
    router.get(p.path, async (req, res, next) => {
      try {
        const principal = await sessionPrincipal(store, signingKey, readCookie(req, SESSION_COOKIE));
        if (!principal) return res.redirect(303, `/login?next=${encodeURIComponent(req.originalUrl)}`);
        const user = await store.users.get(principal.userId);
        const params = req.params as Record<string, string>;
        const valid = Object.values(params).every((v) => ID.test(v));
        const access = valid ? await workspaceAccess(store, principal, params.workspaceId!) : null;
        if (!access?.ok) {
          return htmlPage(res, 404, {
            title: 'Not found',
            assets: WEB_ASSETS,
            body: `<main class="notice"><h1>Not found</h1><p>This workspace does not exist or you are not a member of it.</p><p><a href="/workspace">Your workspaces</a></p></main>`,
          });
        }
        const role = access.access.role;
        shell(req, res, 200, {
          title: p.title,
          page: p.page,
          email: user?.email ?? '',
          workspaceName: access.access.workspace.name,
          data: { ...params, role, canWrite: String(roleAtLeast(role, 'write')) },
        });
      } catch (err) {
        next(err);
      }
    });
  }
  return router;
}
