// The invitation accept page: the link an invitation e-mail carries. The invitee signs in on this server's
// sign-in page (as the invited e-mail address) and accepts or declines with a CSRF-protected form.
import express, { type Request, type Response, type Router } from 'express';
import type { Services } from '../../services.ts';
import type { User } from '../../store/users.ts';
import { SESSION_COOKIE, sessionUser } from '../../identity/web-session.ts';
import { ACCEPT_PATH, acceptInvitation, declineInvitation, describeOffer, invitationByToken, type InvitationView } from '../../organizations/invitations.ts';
import { DomainError } from '../../domain/errors.ts';
import { readCookie } from './cookies.ts';
import { csrfToken, csrfValid } from './csrf.ts';
import { escapeHtml as h, htmlPage, limitAttempts, clientAddress } from './common.ts';
import { WEB_ASSETS } from './chat-routes.ts';

const DECLINE_PATH = '/invitations/decline';
const STATUS_OF_KIND: Partial<Record<DomainError['kind'], number>> = { not_found: 404, forbidden: 403, conflict: 409, invalid: 400 };
const STATUS_TEXT: Record<string, string> = {
  accepted: 'has already been accepted',
  rejected: 'was declined',
  cancelled: 'was cancelled by the organization',
  expired: 'has expired; ask the person who invited you for a new one',
};

export function invitationRoutes(services: Services): Router {
  const router = express.Router();
  const { store, signingKey } = services;
  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 });
  const page = (res: Response, status: number, title: string, body: string) =>
    htmlPage(res, status, { title, assets: WEB_ASSETS, body: `<main class="card invitation">${body}</main>` });
  const signedIn = (req: Request): Promise<User | null> => sessionUser(store, signingKey, readCookie(req, SESSION_COOKIE));
  const notValid = (res: Response) =>
    page(res, 404, 'Invitation not found', '<h1>This invitation link is not valid</h1><p>It may have been replaced by a newer e-mail. Use the link in the most recent invitation you received.</p>');
  const tokenOf = (v: unknown) => (typeof v === 'string' && /^[A-Za-z0-9_-]{20,100}$/.test(v) ? v : '');

  async function offerPage(req: Request, res: Response, view: InvitationView, user: User, token: string) {
    const offer = await describeOffer(store, view.invitation);
    const grants = view.grants.length
      ? `<ul class="grants">${view.grants.map((g) => `<li>${h(g.name)}: <strong>${h(g.permission)}</strong> access</li>`).join('')}</ul>`
      : '';
    const role = view.invitation.organizationId && view.invitation.membershipIntent === 'internal' && view.organizationName
      ? `<p>You join <strong>${h(view.organizationName)}</strong> as <strong>${h(view.invitation.role)}</strong>.</p>`
      : '';
    const csrf = `<input type="hidden" name="csrf" value="${h(csrfToken(services, req, res))}"><input type="hidden" name="token" value="${h(token)}">`;
    page(
      res,
      200,
      'Invitation',
      `<h1>You are invited</h1>
<p>This invitation for <strong>${h(view.invitation.email)}</strong> offers ${h(offer)}.</p>
${role}${grants}
<p>It expires ${h(view.invitation.expiresAt.slice(0, 16).replace('T', ' '))} UTC. Signed in as <strong>${h(user.email)}</strong>.</p>
<div class="actions">
<form method="post" action="${ACCEPT_PATH}">${csrf}<button type="submit">Accept invitation</button></form>
<form method="post" action="${DECLINE_PATH}">${csrf}<button type="submit" class="secondary">Decline</button></form>
</div>`,
    );
  }

  router.get(ACCEPT_PATH, async (req, res, next) => {
    try {
      const token = tokenOf(req.query.token);
      if (!(await limitAttempts(services, res, `invite-view:${clientAddress(req)}`, services.config.web.authAttemptsPerMinute * 10))) return;
      const view = token ? await invitationByToken(store, token) : undefined;
      if (!view) return notValid(res);
      const user = await signedIn(req);
      if (!user) return res.redirect(303, `/login?next=${encodeURIComponent(req.originalUrl)}`);
      if (user.email.toLowerCase() !== view.invitation.email) {
        return page(
          res,
          403,
          'Wrong account',
          `<h1>This invitation is for someone else</h1><p class="error" role="alert">The invitation is for <strong>${h(view.invitation.email)}</strong>; you are signed in as <strong>${h(user.email)}</strong>.</p>
<form method="post" action="/logout"><input type="hidden" name="csrf" value="${h(csrfToken(services, req, res))}"><button type="submit" class="secondary">Sign out</button></form>`,
        );
      }
      if (view.status !== 'pending') return page(res, 410, 'Invitation closed', `<h1>This invitation is closed</h1><p>It ${h(STATUS_TEXT[view.status] ?? view.status)}.</p>`);
      await offerPage(req, res, view, user, token);
    } catch (err) {
      next(err);
    }
  });

  function answer(kind: 'accept' | 'decline') {
    return async (req: Request, res: Response, next: (err?: unknown) => void) => {
      try {
        if (!csrfValid(services, req)) return page(res, 403, 'Expired form', '<h1>This form has expired</h1><p>Go back, reload the page and try again.</p>');
        const user = await signedIn(req);
        const token = tokenOf((req.body as Record<string, unknown> | undefined)?.token);
        if (!user) return res.redirect(303, `/login?next=${encodeURIComponent(`${ACCEPT_PATH}?token=${token}`)}`);
        try {
          if (kind === 'decline') {
            await declineInvitation(store, token, user);
            return page(res, 200, 'Invitation declined', '<h1>Invitation declined</h1><p>Nothing was changed on your account.</p>');
          }
          const view = await invitationByToken(store, token);
          await acceptInvitation(store, token, user);
          const where = view?.grants.length ? `<p>You now have access to ${view.grants.map((g) => `<strong>${h(g.name)}</strong>`).join(', ')}.</p>` : '';
          const org = view?.organizationName && view.invitation.membershipIntent === 'internal' ? `<p>You are a member of <strong>${h(view.organizationName)}</strong>.</p>` : '';
          page(res, 200, 'Invitation accepted', `<h1 role="status">Invitation accepted</h1>${org}${where}<p>Use the API or the <code>sim</code> CLI with your key as before.</p>`);
        } catch (err) {
          if (!(err instanceof DomainError)) throw err;
          page(res, STATUS_OF_KIND[err.kind] ?? 400, 'Invitation', `<h1>The invitation could not be ${kind === 'accept' ? 'accepted' : 'declined'}</h1><p class="error" role="alert">${h(err.message)}</p>`);
        }
      } catch (err) {
        next(err);
      }
    };
  }
  router.post(ACCEPT_PATH, form, answer('accept'));
  router.post(DECLINE_PATH, form, answer('decline'));
  return router;
}
