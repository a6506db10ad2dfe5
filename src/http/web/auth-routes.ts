// Browser sign-in on this server and the CLI's two ways in: the sign-in page (e-mail and password, signed
// session cookie, CSRF-protected forms), the OAuth 2.0 authorization server (metadata, authorize with consent,
// token, revoke) and the pairing handoff's approval page. Protocol endpoints outside the OpenAPI document.
import express, { type Request, type Response, type Router } from 'express';
import type { Services } from '../../services.ts';
import type { User } from '../../store/users.ts';
import { SESSION_COOKIE, checkCredentials, issueSession, sessionUser } from '../../identity/web-session.ts';
import {
  OAuthProtocolError,
  authorizationServerMetadata,
  checkAuthorizeRequest,
  exchangeCode,
  issueAuthorizationCode,
  revokeByToken,
  rotateRefreshToken,
  PUBLIC_CLIENTS,
  type AuthorizeRequest,
} from '../../identity/oauth-server.ts';
import { PairingError, answerPairing, checkPairingParams, openPairing } from '../../identity/pairing.ts';
import { authorizedApps, revokeOAuthGrant } from '../../identity/oauth.ts';
import { IdentityError } from '../../identity/admin.ts';
import { clearCookie, readCookie, setCookie } from './cookies.ts';
import { csrfToken, csrfValid } from './csrf.ts';
import { clientAddress, escapeHtml as h, guessLimits, htmlPage, isSecure, limitAttempts, sendError } from './common.ts';
import { WEB_ASSETS } from './chat-routes.ts';
import { publicBaseUrl } from '../public-url.ts';

const SCOPE_TEXT: Record<string, string> = {
  'api:read': 'Read your workspaces, workflows, runs, logs and files',
  'api:write': 'Change them and run workflows on your behalf',
  offline_access: 'Stay signed in until you sign out or revoke it',
};

/** The page the CLI's "Settings → General → Authorized apps" advice leads to. */
export const AUTHORIZED_APPS_PATH = '/settings/authorized-apps';

/** An ISO time as the pages show it: minutes, in UTC. */
const when = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

/** Only same-site paths: never an absolute URL or a protocol-relative one. */
function safeNext(next: unknown): string | null {
  return typeof next === 'string' && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') && next.length <= 4096 ? next : null;
}

export function authRoutes(services: Services): Router {
  const router = express.Router();
  const { store, signingKey, config } = services;
  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 50 });
  const jsonBody = express.json({ limit: '16kb' });
  const page = (res: Response, status: number, title: string, body: string) => htmlPage(res, status, { title, assets: WEB_ASSETS, body: `<main class="card">${body}</main>` });
  const signedIn = (req: Request): Promise<User | null> => sessionUser(store, signingKey, readCookie(req, SESSION_COOKIE));
  const toLogin = (req: Request, res: Response) => res.redirect(303, `/login?next=${encodeURIComponent(req.originalUrl)}`);
  const badCsrf = (res: Response) => page(res, 403, 'Expired form', '<h1>This form has expired</h1><p>Go back, reload the page and try again.</p>');

  function loginForm(req: Request, res: Response, status: number, o: { next: string | null; email?: string; error?: string }) {
    page(
      res,
      status,
      'Sign in',
      `<h1>Sign in</h1>
${o.error ? `<p class="error" role="alert">${h(o.error)}</p>` : ''}
<form method="post" action="/login">
<input type="hidden" name="csrf" value="${h(csrfToken(services, req, res))}">
${o.next ? `<input type="hidden" name="next" value="${h(o.next)}">` : ''}
<label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${h(o.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`,
    );
  }

  router.get('/login', async (req, res, next) => {
    try {
      const user = await signedIn(req);
      const target = safeNext(req.query.next);
      if (user && target) return res.redirect(303, target);
      if (user) {
        return page(
          res,
          200,
          'Signed in',
          `<h1>Signed in</h1><p>You are signed in as <strong>${h(user.email)}</strong>.</p>
<p><a href="/workspace">Open the console</a>: your workspaces, workflows, runs and data.</p>
<p><a href="${AUTHORIZED_APPS_PATH}">Authorized apps</a>: the CLI logins and other applications that act for you.</p>
<form method="post" action="/logout"><input type="hidden" name="csrf" value="${h(csrfToken(services, req, res))}"><button type="submit" class="secondary">Sign out</button></form>`,
        );
      }
      loginForm(req, res, 200, { next: target });
    } catch (err) {
      next(err);
    }
  });

  router.post('/login', form, async (req, res, next) => {
    try {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const target = safeNext(body.next);
      if (!csrfValid(services, req)) return badCsrf(res);
      const email = typeof body.email === 'string' ? body.email.trim() : '';
      const password = typeof body.password === 'string' ? body.password : '';
      const limits = guessLimits(services, { perTarget: `signin:${email.toLowerCase()}`, perAddress: `signin:${clientAddress(req)}` });
      if (await limits.blocked(res)) return;
      const ok = email && password ? await checkCredentials(store, email, password) : null;
      if (!ok) {
        await limits.failed();
        return loginForm(req, res, 401, { next: target, email, error: 'The e-mail address or the password is not correct.' });
      }
      setCookie(res, SESSION_COOKIE, issueSession(signingKey, ok.user.id, ok.passwordHash, config.web.sessionTtlMs), { maxAgeMs: config.web.sessionTtlMs, secure: isSecure(services, req) });
      res.redirect(303, target ?? '/login');
    } catch (err) {
      next(err);
    }
  });

  router.post('/logout', form, (req, res) => {
    if (!csrfValid(services, req)) return badCsrf(res);
    clearCookie(res, SESSION_COOKIE, isSecure(services, req));
    res.redirect(303, '/login');
  });

  // ---- Settings → General → Authorized apps (where `sim login` tells users to revoke a login) ----
  router.get(AUTHORIZED_APPS_PATH, async (req, res, next) => {
    try {
      const user = await signedIn(req);
      if (!user) return toLogin(req, res);
      const apps = await authorizedApps(store, user.id);
      const csrf = `<input type="hidden" name="csrf" value="${h(csrfToken(services, req, res))}">`;
      const rows = apps
        .map(
          (a) => `<li class="authorized-app">
<strong>${h(a.clientName)}</strong>
<p>${h(a.scopes.includes('api:write') ? 'Can read and change your workspaces and run workflows' : 'Read-only')}${a.scopes.includes('offline_access') ? '; renews itself until revoked' : ''}.</p>
<p>Authorized ${h(when(a.createdAt))}, last renewed ${h(when(a.lastRenewedAt))}.</p>
<form method="post" action="${AUTHORIZED_APPS_PATH}/revoke">${csrf}<input type="hidden" name="grant" value="${h(a.grantId)}"><button type="submit" class="secondary" aria-label="Revoke ${h(a.clientName)}, authorized ${h(when(a.createdAt))}">Revoke</button></form>
</li>`,
        )
        .join('\n');
      page(
        res,
        200,
        'Authorized apps',
        `<p class="breadcrumb">Settings › General</p>
<h1>Authorized apps</h1>
<p>Signed in as <strong>${h(user.email)}</strong>. Each sign-in of the Sim CLI (<code>sim login</code>) and each other application you allowed is listed here; revoking one ends its access at once.</p>
${req.query.revoked === '1' ? '<p class="status" role="status">Revoked: that login no longer works.</p>' : ''}
${apps.length ? `<ul class="authorized-apps">${rows}</ul>` : '<p>No application can act for you right now.</p>'}
<p><a href="/login">Back</a></p>`,
      );
    } catch (err) {
      next(err);
    }
  });

  router.post(`${AUTHORIZED_APPS_PATH}/revoke`, form, async (req, res, next) => {
    try {
      if (!csrfValid(services, req)) return badCsrf(res);
      const user = await signedIn(req);
      if (!user) return toLogin(req, res);
      const grant = (req.body as Record<string, unknown> | undefined)?.grant;
      try {
        await revokeOAuthGrant(store, typeof grant === 'string' ? grant : '', { userId: user.id });
      } catch (err) {
        if (err instanceof IdentityError) return page(res, 404, 'Nothing to revoke', `<h1>Nothing to revoke</h1><p>That authorization was already revoked or has ended.</p><p><a href="${AUTHORIZED_APPS_PATH}">Authorized apps</a></p>`);
        throw err;
      }
      res.redirect(303, `${AUTHORIZED_APPS_PATH}?revoked=1`);
    } catch (err) {
      next(err);
    }
  });

  // ---- OAuth 2.0 for the CLI ----
  const oauthOff = (res: Response) => sendError(res, 404, 'NOT_FOUND', 'OAuth sign-in is turned off on this server (OAUTH_ENABLED=false).');

  router.get('/.well-known/oauth-authorization-server', (req, res) => {
    if (!config.web.oauthEnabled) return oauthOff(res);
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.json(authorizationServerMetadata(publicBaseUrl(req, config)));
  });

  function redirectWith(res: Response, redirectUri: string, params: Record<string, string | null>) {
    const u = new URL(redirectUri);
    for (const [k, v] of Object.entries(params)) if (v !== null) u.searchParams.set(k, v);
    res.redirect(303, u.toString());
  }

  /** Validates an authorization request; shows or redirects its error. Returns null once it has answered. */
  function authorizeRequest(res: Response, params: Record<string, unknown>): AuthorizeRequest | null {
    const checked = checkAuthorizeRequest(params);
    if (checked.ok) return checked.request;
    if (!checked.redirectable) {
      page(res, 400, 'Sign-in error', `<h1>This sign-in link is not valid</h1><p>${h(checked.error.message)}</p><p>Start again from your terminal.</p>`);
    } else {
      redirectWith(res, params.redirect_uri as string, { error: checked.error.code, error_description: checked.error.message, state: typeof params.state === 'string' ? params.state : null });
    }
    return null;
  }

  router.get('/api/auth/oauth2/authorize', async (req, res, next) => {
    try {
      if (!config.web.oauthEnabled) return oauthOff(res);
      const r = authorizeRequest(res, req.query as Record<string, unknown>);
      if (!r) return;
      const user = await signedIn(req);
      if (!user) return toLogin(req, res);
      const hidden = Object.entries({
        client_id: r.clientId,
        response_type: 'code',
        redirect_uri: r.redirectUri,
        scope: r.scopes.join(' '),
        code_challenge: r.codeChallenge,
        code_challenge_method: 'S256',
        state: r.state,
      })
        .filter(([, v]) => v !== null)
        .map(([k, v]) => `<input type="hidden" name="${k}" value="${h(v!)}">`)
        .join('\n');
      const csrf = `<input type="hidden" name="csrf" value="${h(csrfToken(services, req, res))}">`;
      const name = r.clientId === 'sim-cli' ? 'Sim CLI' : r.clientId;
      page(
        res,
        200,
        `Allow ${name}?`,
        `<h1>Allow ${h(name)} to use your account?</h1>
<p>Signed in as <strong>${h(user.email)}</strong>. It will be able to:</p>
<ul>${['api:read', 'api:write', 'offline_access'].filter((s) => r.scopes.includes(s as never)).map((s) => `<li>${h(SCOPE_TEXT[s] ?? s)}</li>`).join('')}</ul>
${r.scopes.includes('api:write') ? '' : '<p>This is a <strong>read-only</strong> login: it cannot change anything.</p>'}
<p>It returns to <code>${h(r.redirectUri)}</code> on this computer.</p>
<div class="actions">
<form method="post" action="/api/auth/oauth2/authorize">${hidden}${csrf}<input type="hidden" name="decision" value="deny"><button type="submit" class="secondary">Deny</button></form>
<form method="post" action="/api/auth/oauth2/authorize">${hidden}${csrf}<input type="hidden" name="decision" value="approve"><button type="submit">Allow</button></form>
</div>`,
      );
    } catch (err) {
      next(err);
    }
  });

  router.post('/api/auth/oauth2/authorize', form, async (req, res, next) => {
    try {
      if (!config.web.oauthEnabled) return oauthOff(res);
      if (!csrfValid(services, req)) return badCsrf(res);
      const body = (req.body ?? {}) as Record<string, unknown>;
      const r = authorizeRequest(res, body);
      if (!r) return;
      const user = await signedIn(req);
      if (!user) return page(res, 401, 'Signed out', '<h1>You are signed out</h1><p>Start the sign-in again from your terminal.</p>');
      if (body.decision !== 'approve') return redirectWith(res, r.redirectUri, { error: 'access_denied', error_description: 'The user denied the request.', state: r.state });
      const code = await issueAuthorizationCode(store, user.id, r);
      redirectWith(res, r.redirectUri, { code, state: r.state });
    } catch (err) {
      next(err);
    }
  });

  const oauthError = (res: Response, e: OAuthProtocolError) => {
    res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
    res.status(e.code === 'invalid_client' ? 401 : 400).json({ error: e.code, error_description: e.message });
  };

  router.post('/api/auth/oauth2/token', form, jsonBody, async (req, res, next) => {
    try {
      if (!config.web.oauthEnabled) return oauthOff(res);
      if (!(await limitAttempts(services, res, `oauth-token:${clientAddress(req)}`, config.rateLimits.free.api))) return;
      const b = (req.body ?? {}) as Record<string, unknown>;
      const str = (k: string) => (typeof b[k] === 'string' ? (b[k] as string) : '');
      if (!PUBLIC_CLIENTS.has(str('client_id'))) return oauthError(res, new OAuthProtocolError('invalid_client', 'Unknown client_id.'));
      let tokens;
      if (str('grant_type') === 'authorization_code') {
        if (!str('code') || !str('redirect_uri') || !str('code_verifier')) {
          return oauthError(res, new OAuthProtocolError('invalid_request', 'code, redirect_uri and code_verifier are required.'));
        }
        tokens = await exchangeCode(store, { clientId: str('client_id'), code: str('code'), redirectUri: str('redirect_uri'), codeVerifier: str('code_verifier') });
      } else if (str('grant_type') === 'refresh_token') {
        if (!str('refresh_token')) return oauthError(res, new OAuthProtocolError('invalid_request', 'refresh_token is required.'));
        tokens = await rotateRefreshToken(store, { clientId: str('client_id'), refreshToken: str('refresh_token') });
      } else {
        return oauthError(res, new OAuthProtocolError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.'));
      }
      res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' }).json(tokens);
    } catch (err) {
      if (err instanceof OAuthProtocolError) {
        // A replayed code or reused refresh token may just have revoked a login whose tokens are cached here.
        services.credentials.invalidate();
        return oauthError(res, err);
      }
      next(err);
    }
  });

  router.post('/api/auth/oauth2/revoke', form, jsonBody, async (req, res, next) => {
    try {
      if (!config.web.oauthEnabled) return oauthOff(res);
      const b = (req.body ?? {}) as Record<string, unknown>;
      if (typeof b.client_id !== 'string' || !PUBLIC_CLIENTS.has(b.client_id)) return oauthError(res, new OAuthProtocolError('invalid_client', 'Unknown client_id.'));
      if (typeof b.token !== 'string' || !b.token) return oauthError(res, new OAuthProtocolError('invalid_request', 'token is required.'));
      await revokeByToken(store, b.client_id, b.token);
      services.credentials.invalidate();
      res.set('Cache-Control', 'no-store').json({});
    } catch (err) {
      next(err);
    }
  });

  router.get('/cli/auth/done', (req, res) => {
    const cancelled = req.query.status === 'cancelled';
    page(
      res,
      200,
      cancelled ? 'Sign-in cancelled' : 'Signed in',
      cancelled
        ? '<h1>Sign-in cancelled</h1><p>Nothing was changed. You can close this tab.</p>'
        : '<h1>You are signed in</h1><p>Return to your terminal; you can close this tab.</p>',
    );
  });

  // ---- Pairing handoff (sim login --method api-key) ----
  router.get('/cli/auth', async (req, res, next) => {
    try {
      let params;
      try {
        params = checkPairingParams(req.query as Record<string, unknown>);
      } catch (err) {
        if (err instanceof PairingError) return page(res, 400, 'Sign-in error', `<h1>This sign-in link is not valid</h1><p>${h(err.message)}</p>`);
        throw err;
      }
      const user = await signedIn(req);
      if (!user) return toLogin(req, res);
      try {
        await openPairing(store, params);
      } catch (err) {
        if (err instanceof PairingError) return page(res, 409, 'Sign-in error', `<h1>This sign-in request cannot be approved</h1><p>${h(err.message)}</p>`);
        throw err;
      }
      const fields = `<input type="hidden" name="csrf" value="${h(csrfToken(services, req, res))}"><input type="hidden" name="request" value="${h(params.request)}">`;
      page(
        res,
        200,
        'Approve CLI sign-in',
        `<h1>Sign in the Sim CLI?</h1>
<p>Signed in as <strong>${h(user.email)}</strong>. Approving creates a personal API key for the terminal that shows this code:</p>
<p class="pairing" aria-label="Pairing code">${h(params.pairing)}</p>
<p>Only approve if your terminal shows exactly this code.</p>
<div class="actions">
<form method="post" action="/api/cli/auth/approve">${fields}<input type="hidden" name="decision" value="deny"><button type="submit" class="secondary">Deny</button></form>
<form method="post" action="/api/cli/auth/approve">${fields}<input type="hidden" name="decision" value="approve"><button type="submit">Approve</button></form>
</div>`,
      );
    } catch (err) {
      next(err);
    }
  });

  router.post('/api/cli/auth/approve', form, async (req, res, next) => {
    try {
      if (!csrfValid(services, req)) return badCsrf(res);
      const user = await signedIn(req);
      if (!user) return page(res, 401, 'Signed out', '<h1>You are signed out</h1><p>Open the link from your terminal again.</p>');
      const body = (req.body ?? {}) as Record<string, unknown>;
      const approve = body.decision === 'approve';
      try {
        await answerPairing(store, typeof body.request === 'string' ? body.request : '', user.id, approve);
      } catch (err) {
        if (err instanceof PairingError) return page(res, 409, 'Sign-in error', `<h1>Nothing to approve</h1><p>${h(err.message)}</p>`);
        throw err;
      }
      page(res, 200, approve ? 'Approved' : 'Denied', approve ? '<h1>Approved</h1><p>Return to your terminal; it finishes signing in by itself.</p>' : '<h1>Denied</h1><p>The terminal was not signed in.</p>');
    } catch (err) {
      next(err);
    }
  });

  return router;
}
