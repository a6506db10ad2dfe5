// Files handlers: share links (members set them up; anyone with an active link reads the file).
import { randomUUID } from 'node:crypto';
import type { Handler } from '../../../generated/handlers.ts';
import { ApiError, forbidden, invalidField, notFound } from '../../http/errors.ts';
import { StreamBody } from '../../http/stream-body.ts';
import { checkSharePassword, hashSharePassword, newShareToken } from '../../files/tokens.ts';
import { hashShareToken, sealShareToken } from '../../files/share-tokens.ts';
import type { FileShareRecord } from '../../store/file-shares.ts';
import { loadFile } from '../../files/service.ts';
import { serveContent } from '../../files/download.ts';
import { nowIso, viewOfShare, workspaceOf } from './shared.ts';
import { assertAccess } from '../../access-control/policy.ts';

// ───────────────────────────── sharing ─────────────────────────────



export const getFileShare: Handler<'getFileShare'> = async ({ params, ctx }) => {
  const file = await loadFile(ctx.services.store, workspaceOf(ctx).id, params.fileId);
  const share = await ctx.services.store.fileShares.forFile(file.id);
  return { status: 200, body: { data: share ? viewOfShare(ctx, share) : null } };
};

export const upsertFileShare: Handler<'upsertFileShare'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const share = await ctx.mutate(async (tx, audit) => {
    const file = await loadFile(tx, workspaceId, params.fileId);
    const existing = await tx.fileShares.forFile(file.id);
    const now = nowIso();
    const authType = body.authType ?? existing?.authType ?? 'public';
    if (body.isActive) {
      const actor = { workspaceId, userId: ctx.principal.userId };
      await assertAccess(tx, actor, { kind: 'feature', key: 'disablePublicFileSharing', action: 'Sharing files' });
      await assertAccess(tx, actor, { kind: 'file_share_auth', authType });
    }
    let passwordHash = body.password !== undefined ? hashSharePassword(body.password) : (existing?.passwordHash ?? null);
    let allowedEmails = body.allowedEmails ?? existing?.allowedEmails ?? [];
    if (body.isActive) {
      // Enabling rewrites the credentials the chosen mode does not use.
      if (authType === 'public') [passwordHash, allowedEmails] = [null, []];
      if (authType === 'password') {
        allowedEmails = [];
        if (!passwordHash) throw invalidField(['body', 'password'], 'A password share needs a password.');
      }
      if (authType === 'email' || authType === 'sso') {
        passwordHash = null;
        if (allowedEmails.length === 0) throw invalidField(['body', 'allowedEmails'], `An ${authType} share needs at least one allowed address.`);
      }
    }
    const id = existing?.id ?? randomUUID();
    const next: FileShareRecord = {
      id,
      fileId: file.id,
      workspaceId,
      ...(existing ? { tokenHash: existing.tokenHash, tokenSealed: existing.tokenSealed } : sealShareToken(ctx.services.secrets, id, newShareToken())),
      isActive: body.isActive,
      authType,
      passwordHash,
      allowedEmails,
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    await tx.fileShares.upsert(next);
    audit({ action: body.isActive ? 'file.share_enabled' : 'file.share_disabled', resourceType: 'file', resourceId: file.id, resourceName: file.name, metadata: { authType } });
    return next;
  });
  return { status: 200, body: { data: viewOfShare(ctx, share) } };
};



/** GET /shared/files/{token} — a shared file's content, without a key, while its share is active. */
export const getSharedFile: Handler<'getSharedFile'> = async ({ params, headers, ctx }) => {
  const { store, blobs } = ctx.services;
  const share = await store.fileShares.byTokenHash(hashShareToken(params.token));
  // An inactive share is indistinguishable from one that never existed.
  if (!share || !share.isActive) throw notFound('Shared file');
  const file = await store.files.get(share.fileId);
  if (!file || file.deletedAt) throw notFound('Shared file');
  if (share.authType === 'password') {
    const password = headers['x-share-password'];
    if (typeof password !== 'string' || !share.passwordHash || !checkSharePassword(password, share.passwordHash)) {
      throw new ApiError('UNAUTHORIZED', 'This shared file needs its password in the X-Share-Password header.', undefined, {
        'WWW-Authenticate': 'SharePassword realm="shared-file", header="X-Share-Password"',
      });
    }
  } else if (share.authType !== 'public') {
    throw forbidden('This shared file is limited to signed-in addresses, which this server cannot check for a link.', { code: 'SHARE_SIGN_IN_REQUIRED' });
  }
  const served = serveContent(blobs, { blobKey: file.blobKey, size: file.size, contentType: file.contentType, name: file.name }, headers.range);
  return { status: served.status as 200 | 206, body: new StreamBody(served.stream), headers: served.headers };
};
