// Files handlers: upload sessions (create, read, part URLs, abort, complete) and the signed part transfer. Completion lives in src/files/.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { ApiError, conflict, forbidden, invalidField, notFound } from '../../http/errors.ts';
import type { UploadSessionRecord } from '../../store/file-uploads.ts';
import { BlobSizeError } from '../../files/blob-store.ts';
import { checkFileName, essence, folderPathOf } from '../../files/names.ts';
import { checkTransfer, signTransfer, signUploadToken } from '../../files/tokens.ts';
import { sessionView } from '../../files/views.ts';
import { newUploadSession, completeFileUploadSession, openFileUpload } from '../../files/service.ts';
import { releaseTransferBuffers } from '../../http/transfer-memory.ts';
import { abortUpload, isExpired, loadUploadSession, partLength } from '../../files/uploads.ts';
import type { Store } from '../../store/index.ts';
import type { BlobStore } from '../../files/blob-store.ts';
import type { Mutate } from '../../domain/changes.ts';
import type { LeaseSettings } from '../../config.ts';
import { baseUrl, checked, workspaceOf } from './shared.ts';

// ───────────────────────────── upload sessions ─────────────────────────────

function partUrl(ctx: RequestContext, session: UploadSessionRecord, partNumber: number): string {
  const expires = Date.parse(session.expiresAt);
  const signature = signTransfer(ctx.services.signingKey, session.id, partNumber, expires);
  return `${baseUrl(ctx)}/transfers/files/${session.id}/parts/${partNumber}?expires=${expires}&signature=${signature}`;
}

/** The session named in the path, after checking the `upload-token` header belongs to it. */
const sessionFor = (ctx: RequestContext, uploadId: string, token: string) =>
  loadUploadSession(ctx.services.store, ctx.services.signingKey, uploadId, token, workspaceOf(ctx).id);

/** What completion and abort need: the store, the blobs, and the request's change (transaction with audit). */
const uploadIo = (ctx: RequestContext): { store: Store; blobs: BlobStore; mutate: Mutate; leases: LeaseSettings } => ({
  store: ctx.services.store,
  blobs: ctx.services.blobs,
  mutate: (fn) => ctx.mutate(fn),
  leases: ctx.services.config.leases,
});

async function sessionBody(ctx: RequestContext, session: UploadSessionRecord) {
  const file = session.fileId ? ((await ctx.services.store.files.get(session.fileId)) ?? null) : null;
  return { data: sessionView(baseUrl(ctx), session, file) };
}

export const createFileUpload: Handler<'createFileUpload'> = async ({ body, ctx }) => {
  const workspace = workspaceOf(ctx);
  const name = checked('body', () => checkFileName(body.name));
  const folderPath = checked('body', () => folderPathOf(body.folderPath));
  const limits = ctx.services.config.files;
  const session = newUploadSession({ workspaceId: workspace.id, userId: ctx.principal.userId, name, contentType: body.contentType, size: body.size, folderPath }, limits);
  const { multipart } = session;
  await ctx.mutate((tx, audit) => openFileUpload(tx, audit, workspace, limits, session));
  const uploadToken = signUploadToken(ctx.services.signingKey, { uploadId: session.id, workspaceId: workspace.id, expiresAt: Date.parse(session.expiresAt) });
  const transfer = multipart
    ? { method: 'multipart' as const, partSize: session.partSize, partCount: session.partCount }
    : { method: 'put' as const, url: partUrl(ctx, session, 1), headers: { 'Content-Type': session.contentType }, expiresAt: session.expiresAt };
  return { status: 200, body: { data: { session: sessionView(baseUrl(ctx), session, null), uploadToken, transfer } } };
};

export const getFileUpload: Handler<'getFileUpload'> = async ({ params, headers, ctx }) => {
  const session = await sessionFor(ctx, params.uploadId, headers['upload-token']);
  return { status: 200, body: await sessionBody(ctx, session) };
};

export const createFileUploadPartUrls: Handler<'createFileUploadPartUrls'> = async ({ params, headers, body, ctx }) => {
  const session = await sessionFor(ctx, params.uploadId, headers['upload-token']);
  if (session.status !== 'uploading' || isExpired(session)) throw conflict(`The upload session is ${isExpired(session) ? 'expired' : session.status}.`);
  const bad = body.partNumbers.findIndex((n) => n > session.partCount);
  if (bad !== -1) throw invalidField(['body', 'partNumbers', bad], `Part numbers run from 1 to ${session.partCount} for this upload.`);
  const parts = [...new Set(body.partNumbers)].map((partNumber) => ({
    partNumber,
    url: partUrl(ctx, session, partNumber),
    headers: { 'Content-Type': session.contentType },
    expiresAt: session.expiresAt,
  }));
  return { status: 200, body: { data: { parts } } };
};

export const abortFileUpload: Handler<'abortFileUpload'> = async ({ params, headers, ctx }) => {
  const session = await sessionFor(ctx, params.uploadId, headers['upload-token']);
  if (session.status === 'completed') throw conflict('The upload is already completed; delete the file instead.');
  await abortUpload(uploadIo(ctx), session, 'file_upload');
  return { status: 200, body: await sessionBody(ctx, (await ctx.services.store.fileUploads.get(session.id))!) };
};

export const completeFileUpload: Handler<'completeFileUpload'> = async ({ params, headers, ctx }) => {
  const session = await sessionFor(ctx, params.uploadId, headers['upload-token']);
  await completeFileUploadSession(uploadIo(ctx), session.id);
  return { status: 200, body: await sessionBody(ctx, (await ctx.services.store.fileUploads.get(session.id))!) };
};

/** PUT /transfers/files/{uploadId}/parts/{partNumber} — the signed transfer URL: raw bytes of one part. */
export const putFileUploadPart: Handler<'putFileUploadPart'> = async ({ params, query, body, ctx }) => {
  const { services } = ctx;
  const { uploadId, partNumber } = params;
  const problem = checkTransfer(services.signingKey, uploadId, partNumber, query.expires, query.signature);
  if (problem) {
    throw forbidden(problem === 'expired' ? 'The signed upload URL has expired.' : 'The upload URL signature is not valid.', { code: 'INVALID_SIGNATURE', reason: problem });
  }
  const session = await services.store.fileUploads.get(uploadId);
  if (!session) throw notFound('Upload session');
  if (session.status !== 'uploading') throw conflict(`The upload session is ${session.status}.`, { code: 'UPLOAD_NOT_ACTIVE', status: session.status });
  if (Date.parse(session.expiresAt) <= Date.now()) throw conflict('The upload session is expired.', { code: 'UPLOAD_NOT_ACTIVE', status: 'expired' });
  if (partNumber > session.partCount) throw invalidField(['path', 'partNumber'], `Part numbers run from 1 to ${session.partCount} for this upload.`);
  const sent = body.headers['content-type'];
  if (!sent || essence(sent) !== essence(session.contentType)) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', `Send the bytes with Content-Type ${session.contentType}, as the upload declared.`);
  }
  const expected = partLength(session, partNumber);
  const declared = body.headers['content-length'];
  if (declared !== undefined && Number(declared) !== expected) {
    throw invalidField(['headers', 'content-length'], `Part ${partNumber} must be exactly ${expected} bytes; ${declared} were declared.`);
  }
  try {
    await services.blobs.writeUploadPart(uploadId, (partNumber - 1) * session.partSize, expected, body);
  } catch (err) {
    if (err instanceof BlobSizeError) {
      throw invalidField(['body'], err.kind === 'too_many_bytes' ? `More bytes were sent than the ${err.expected} this part holds.` : err.message);
    }
    throw err;
  }
  releaseTransferBuffers(expected);
  // Recording a part is bookkeeping of an upload whose creation and completion are audited.
  await services.store.transaction((tx) => tx.fileUploads.recordPart(uploadId, partNumber, expected));
  return { status: 200, body: undefined, headers: { ETag: `"${uploadId}-${partNumber}"` } };
};
