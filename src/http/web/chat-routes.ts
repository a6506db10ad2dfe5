// The hosted chat as browsers use it: the page at {CHAT_URL}/{identifier} and its JSON/SSE endpoints under
// /api/chat/{identifier}. These are protocol endpoints outside the OpenAPI document (see README "Hosted chat").
import express, { type Request, type Response, type Router } from 'express';
import type { Services } from '../../services.ts';
import type { ChatDeployment } from '../../store/chat-deployments.ts';
import { emailAllowed } from '../../chat/settings.ts';
import { CHAT_COOKIE_TTL_MS, CODE_MAX_ATTEMPTS, CODE_TTL_MS, chatAccess, chatCookieName, codeHash, issueChatCookie, newCode } from '../../chat/visitor.ts';
import { ChatUnavailable, runChatMessage, type ChatFrame } from '../../chat/runner.ts';
import { verifyPassword } from '../../identity/passwords.ts';
import { SESSION_COOKIE, sessionUser } from '../../identity/web-session.ts';
import { readCookie, setCookie } from './cookies.ts';
import { clientAddress, escapeHtml, guessLimits, htmlPage, isSecure, limitAttempts, sendError } from './common.ts';

export const WEB_ASSETS = '/_web';
const IDENTIFIER = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const MAX_INPUT = 10_000;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Where this server serves chat pages: CHAT_URL's path, or /chat (a CHAT_URL on its own host is proxied there). */
export function chatMountPath(services: Services): string {
  if (!services.config.web.chatUrl) return '/chat';
  const p = new URL(services.config.web.chatUrl).pathname.replace(/\/+$/, '');
  return p === '' ? '/chat' : p;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export function chatRoutes(services: Services): Router {
  const router = express.Router();
  const { store, signingKey } = services;
  const json = express.json({ limit: '1mb' });

  async function findChat(req: Request, res: Response): Promise<ChatDeployment | null> {
    const identifier = String(req.params.identifier ?? '');
    const chat = IDENTIFIER.test(identifier) ? await store.chatDeployments.getByIdentifier(identifier) : undefined;
    if (!chat) {
      sendError(res, 404, 'NOT_FOUND', 'This chat does not exist or has been deleted.', { reason: 'chat_not_found' });
      return null;
    }
    if (!chat.isActive) {
      sendError(res, 403, 'FORBIDDEN', 'This chat is currently inactive.', { reason: 'chat_inactive' });
      return null;
    }
    return chat;
  }

  async function access(req: Request, chat: ChatDeployment) {
    const session = chat.authType === 'sso' ? await sessionUser(store, signingKey, readCookie(req, SESSION_COOKIE)) : null;
    return chatAccess(signingKey, chat, readCookie(req, chatCookieName(chat)), session?.email ?? null);
  }

  const requireJson = (req: Request, res: Response): Json | null => {
    if (!req.is('application/json')) {
      sendError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', 'Send the request body as application/json.');
      return null;
    }
    if (!isObject(req.body)) {
      sendError(res, 400, 'BAD_REQUEST', 'The request body must be a JSON object.');
      return null;
    }
    return req.body;
  };

  const grant = (req: Request, res: Response, chat: ChatDeployment, email: string | null) =>
    setCookie(res, chatCookieName(chat), issueChatCookie(signingKey, chat, email), { maxAgeMs: CHAT_COOKIE_TTL_MS, secure: isSecure(services, req), path: '/' });

  const publicConfig = (chat: ChatDeployment) => ({
    id: chat.id,
    identifier: chat.identifier,
    title: chat.title,
    description: chat.description,
    customizations: chat.customizations,
    authType: chat.authType,
    outputConfigs: chat.outputConfigs,
    includeThinking: chat.includeThinking,
    includeToolCalls: chat.includeToolCalls,
  });

  // The page: a small static shell; /_web/chat.js fetches the configuration and drives the conversation.
  router.get(`${chatMountPath(services)}/:identifier`, async (req, res, next) => {
    try {
      const identifier = String(req.params.identifier);
      const chat = IDENTIFIER.test(identifier) ? await store.chatDeployments.getByIdentifier(identifier) : undefined;
      if (!chat || !chat.isActive) {
        const [status, title, text] = !chat
          ? [404, 'Chat not found', 'This chat does not exist or has been deleted.']
          : [403, 'Chat unavailable', 'This chat is currently inactive. Please check back later.'];
        htmlPage(res, status, { title, assets: WEB_ASSETS, body: `<main class="notice"><h1>${title}</h1><p>${text}</p></main>` });
        return;
      }
      const c = chat.customizations;
      const logo = c.imageUrl ? `<img class="logo" src="${escapeHtml(c.imageUrl)}" alt="">` : '';
      htmlPage(res, 200, {
        title: chat.title,
        assets: WEB_ASSETS,
        script: 'chat.js',
        bodyAttrs: `data-identifier="${escapeHtml(chat.identifier)}" data-accent="${escapeHtml(c.primaryColor ?? '#802FFF')}"`,
        body: `<div class="chat">
<header class="chat-header">${logo}<div><h1>${escapeHtml(chat.title)}</h1>${chat.description ? `<p class="description">${escapeHtml(chat.description)}</p>` : ''}</div></header>
<main id="main">
<section id="gate" hidden aria-labelledby="gate-title"></section>
<section id="conversation" hidden aria-label="Conversation">
<ol id="messages" aria-live="polite" aria-relevant="additions text"></ol>
</section>
<form id="composer" hidden>
<label for="message" class="visually-hidden">Your message</label>
<textarea id="message" name="message" rows="2" maxlength="${MAX_INPUT}" placeholder="Type a message…" required></textarea>
<button type="submit" id="send">Send</button>
</form>
<p id="status" role="status" class="status"></p>
<noscript><p>This chat needs JavaScript.</p></noscript>
</main>
</div>`,
      });
    } catch (err) {
      next(err);
    }
  });

  router.get('/api/chat/:identifier', async (req, res, next) => {
    try {
      const chat = await findChat(req, res);
      if (!chat) return;
      const a = await access(req, chat);
      res.setHeader('Cache-Control', 'no-store');
      if (!a.ok) {
        sendError(res, 401, 'UNAUTHORIZED', 'Sign in to use this chat.', { reason: a.reason, authType: chat.authType, title: chat.title });
        return;
      }
      res.json(publicConfig(chat));
    } catch (err) {
      next(err);
    }
  });

  // Password or e-mail step of the gate, or a message.
  router.post('/api/chat/:identifier', json, async (req, res, next) => {
    try {
      const chat = await findChat(req, res);
      if (!chat) return;
      const body = requireJson(req, res);
      if (!body) return;
      if ('password' in body && !('input' in body)) {
        if (chat.authType !== 'password') return sendError(res, 400, 'BAD_REQUEST', 'This chat is not protected by a password.');
        const limits = guessLimits(services, { perTarget: `chat-password:${chat.id}`, perAddress: `chat-password:${clientAddress(req)}` });
        if (await limits.blocked(res)) return;
        if (typeof body.password !== 'string' || !(await verifyPassword(body.password, chat.passwordHash))) {
          await limits.failed();
          return sendError(res, 401, 'UNAUTHORIZED', 'The password is not correct.', { reason: 'invalid_password' });
        }
        grant(req, res, chat, null);
        return res.json({ authenticated: true });
      }
      if ('email' in body && !('input' in body)) {
        if (chat.authType !== 'email') return sendError(res, 400, 'BAD_REQUEST', 'This chat does not use e-mail codes.');
        if (typeof body.email !== 'string' || !EMAIL.test(body.email)) return sendError(res, 400, 'BAD_REQUEST', 'Give a valid e-mail address.');
        if (!emailAllowed(chat.allowedEmails, body.email)) return sendError(res, 403, 'FORBIDDEN', 'This e-mail address is not allowed to use this chat.', { reason: 'email_not_allowed' });
        return res.json({ status: 'otp_required' });
      }
      const a = await access(req, chat);
      if (!a.ok) return sendError(res, 401, 'UNAUTHORIZED', 'Sign in to use this chat.', { reason: a.reason });
      const unknown = Object.keys(body).filter((k) => !['input', 'conversationId'].includes(k));
      if (unknown.length) return sendError(res, 400, 'BAD_REQUEST', `Unrecognized field(s): ${unknown.join(', ')}.`, [{ code: 'unrecognized_keys', keys: unknown, path: ['body'], message: 'Unrecognized keys' }]);
      const { input, conversationId } = body;
      if (typeof input !== 'string' || input.trim() === '' || input.length > MAX_INPUT) {
        return sendError(res, 400, 'BAD_REQUEST', `input must be a non-empty string of at most ${MAX_INPUT} characters.`);
      }
      if (conversationId !== undefined && (typeof conversationId !== 'string' || conversationId.length === 0 || conversationId.length > 256)) {
        return sendError(res, 400, 'BAD_REQUEST', 'conversationId must be a string of 1 to 256 characters.');
      }
      // Billed to and rate-limited like the chat creator's own synchronous runs, and per visitor address.
      const ws = await store.workspaces.get(chat.workspaceId);
      const capacity = services.config.rateLimits[ws?.plan ?? 'free'].sync;
      if (!(await limitAttempts(services, res, `user:${chat.createdBy}:sync`, capacity))) return;
      if (!(await limitAttempts(services, res, `chat-visitor:${clientAddress(req)}:sync`, capacity))) return;
      const conversation = (conversationId as string | undefined) ?? crypto.randomUUID();
      let started = false;
      let heartbeat: NodeJS.Timeout | undefined;
      const open = () => {
        if (started) return;
        started = true;
        res.status(200).set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
        res.flushHeaders();
        // A comment line now and then keeps proxies from closing a long, quiet answer.
        heartbeat = setInterval(() => {
          if (!res.writableEnded) res.write(': keep-alive\n\n');
        }, 15_000);
        heartbeat.unref();
      };
      const send = (frame: ChatFrame | '[DONE]') => {
        open();
        if (!res.writableEnded) res.write(`data: ${JSON.stringify(frame)}\n\n`);
      };
      try {
        await runChatMessage(services, chat, { input, conversationId: conversation }, send);
      } catch (err) {
        if (err instanceof ChatUnavailable) {
          if (!started) return sendError(res, 503, 'SERVICE_UNAVAILABLE', err.message, { reason: 'workflow_not_deployed' });
          send({ event: 'error', error: err.message });
        } else {
          req.log?.error({ err, chatId: chat.id }, 'chat message failed');
          if (!started) return sendError(res, 500, 'INTERNAL_ERROR', 'An unexpected error occurred.');
          send({ event: 'error', error: 'Sorry, something went wrong while answering.' });
        }
      }
      clearInterval(heartbeat);
      send('[DONE]');
      res.end();
    } catch (err) {
      next(err);
    }
  });

  // E-mail gate: {email} sends a one-time code; {email, otp} checks it and sets the auth cookie.
  router.post('/api/chat/:identifier/otp', json, async (req, res, next) => {
    try {
      const chat = await findChat(req, res);
      if (!chat) return;
      const body = requireJson(req, res);
      if (!body) return;
      if (chat.authType !== 'email') return sendError(res, 400, 'BAD_REQUEST', 'This chat does not use e-mail codes.');
      const email = typeof body.email === 'string' ? body.email.trim().toLowerCase() : '';
      if (!EMAIL.test(email)) return sendError(res, 400, 'BAD_REQUEST', 'Give a valid e-mail address.');
      const limits = guessLimits(services, { perTarget: `chat-otp:${chat.id}:${email}`, perAddress: `chat-otp:${clientAddress(req)}` });
      if (await limits.blocked(res)) return;
      if (!emailAllowed(chat.allowedEmails, email)) return sendError(res, 403, 'FORBIDDEN', 'This e-mail address is not allowed to use this chat.', { reason: 'email_not_allowed' });
      if (body.otp === undefined) {
        // Sending is limited per address and per client, so the form cannot be used to flood a mailbox.
        if (!(await limitAttempts(services, res, `chat-otp-send:${chat.id}:${email}`))) return;
        if (!(await limitAttempts(services, res, `chat-otp-send:${clientAddress(req)}`, services.config.web.authAttemptsPerMinute * 10))) return;
        const code = newCode();
        await store.transaction((tx) => tx.chatDeployments.putCode(chat.id, email, codeHash(chat.id, email, code), new Date(Date.now() + CODE_TTL_MS).toISOString()));
        await services.mailer.send({
          to: email,
          subject: `Your code for ${chat.title}`,
          text: `Your one-time code for "${chat.title}" is ${code}. It is valid for ${CODE_TTL_MS / 60000} minutes.`,
        });
        return res.json({ status: 'otp_sent' });
      }
      const stored = await store.chatDeployments.getCode(chat.id, email);
      if (!stored) return sendError(res, 401, 'UNAUTHORIZED', 'There is no code for this address; ask for a new one.', { reason: 'invalid_otp' });
      if (stored.expiresAt <= new Date().toISOString()) {
        await store.transaction((tx) => tx.chatDeployments.deleteCode(chat.id, email));
        return sendError(res, 401, 'UNAUTHORIZED', 'The code has expired; ask for a new one.', { reason: 'otp_expired' });
      }
      if (stored.attempts >= CODE_MAX_ATTEMPTS) return sendError(res, 401, 'UNAUTHORIZED', 'Too many wrong codes; ask for a new one.', { reason: 'otp_exhausted' });
      if (typeof body.otp !== 'string' || codeHash(chat.id, email, body.otp.trim()) !== stored.codeHash) {
        await limits.failed();
        await store.transaction((tx) => tx.chatDeployments.countCodeAttempt(chat.id, email));
        return sendError(res, 401, 'UNAUTHORIZED', 'The code is not correct.', { reason: 'invalid_otp' });
      }
      await store.transaction((tx) => tx.chatDeployments.deleteCode(chat.id, email));
      grant(req, res, chat, email);
      return res.json({ authenticated: true });
    } catch (err) {
      next(err);
    }
  });

  // SSO gate: whether an address may use the chat once signed in to this server.
  router.post('/api/chat/:identifier/sso', json, async (req, res, next) => {
    try {
      const chat = await findChat(req, res);
      if (!chat) return;
      const body = requireJson(req, res);
      if (!body) return;
      if (!(await limitAttempts(services, res, `chat-sso:${chat.id}:${clientAddress(req)}`))) return;
      const email = typeof body.email === 'string' ? body.email : '';
      res.json({ eligible: chat.authType === 'sso' && EMAIL.test(email) && emailAllowed(chat.allowedEmails, email) });
    } catch (err) {
      next(err);
    }
  });

  return router;
}

