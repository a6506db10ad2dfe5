// Knowledge document uploads ride on the workspace file upload sessions (file_upload_sessions, the signed
// transfer URLs and the blob store's staging); knowledge_upload_sessions adds the target base and options.
// Their control tokens are signed for `kb:<uploadId>`, so the Files operations refuse them and vice versa.
import type { Repositories } from '../store/index.ts';
import type { UploadSessionRecord } from '../store/file-uploads.ts';
import { checkUploadToken, signTransfer, signUploadToken } from '../files/tokens.ts';
import { conflict, forbidden, notFound } from '../http/errors.ts';

export const tokenSubject = (uploadId: string) => `kb:${uploadId}`;

export function signKnowledgeUploadToken(key: Buffer, session: UploadSessionRecord): string {
  return signUploadToken(key, { uploadId: tokenSubject(session.id), workspaceId: session.workspaceId, expiresAt: Date.parse(session.expiresAt) });
}

export function checkKnowledgeUploadToken(key: Buffer, token: string, uploadId: string, workspaceId: string): void {
  const problem = checkUploadToken(key, token, tokenSubject(uploadId), workspaceId);
  if (problem) {
    throw forbidden(
      problem === 'expired' ? 'The upload token has expired.' : problem === 'foreign' ? 'The upload token belongs to another upload session.' : 'The upload token is not valid.',
      { code: 'INVALID_UPLOAD_TOKEN', reason: problem },
    );
  }
}

/** The signed PUT URL of one part (the same transfer route as workspace file uploads). */
export function partUrl(baseUrl: string, key: Buffer, session: UploadSessionRecord, partNumber: number): string {
  const expires = Date.parse(session.expiresAt);
  return `${baseUrl}/transfers/files/${session.id}/parts/${partNumber}?expires=${expires}&signature=${signTransfer(key, session.id, partNumber, expires)}`;
}

export const isExpired = (s: UploadSessionRecord) => Date.parse(s.expiresAt) <= Date.now();

/** Refuses completion unless the session is receiving and every part arrived with its exact size. */
export async function assertComplete(repos: Repositories, session: UploadSessionRecord): Promise<void> {
  if (session.status === 'completed') throw conflict('The upload is already completed.', { code: 'UPLOAD_COMPLETED' });
  if (session.status !== 'uploading') throw conflict(`The upload session is ${session.status}.`, { code: 'UPLOAD_NOT_ACTIVE', status: session.status });
  if (isExpired(session)) throw conflict('The upload session is expired.', { code: 'UPLOAD_NOT_ACTIVE', status: 'expired' });
  const parts = await repos.fileUploads.parts(session.id);
  const missing: number[] = [];
  for (let n = 1; n <= session.partCount; n++) {
    const expected = n < session.partCount ? session.partSize : session.size - (session.partCount - 1) * session.partSize;
    const got = parts.find((p) => p.partNumber === n);
    if (expected > 0 && (!got || got.size !== expected)) missing.push(n);
  }
  if (missing.length > 0) {
    throw conflict(`Not every byte has arrived: ${missing.length} of ${session.partCount} parts are missing.`, { code: 'UPLOAD_INCOMPLETE', missingParts: missing.slice(0, 100) });
  }
}

export async function loadKnowledgeSession(repos: Repositories, uploadId: string, workspaceId: string, knowledgeBaseId: string) {
  const session = await repos.fileUploads.get(uploadId);
  const link = session ? await repos.knowledgeUploads.get(uploadId) : undefined;
  if (!session || !link || session.workspaceId !== workspaceId || link.knowledgeBaseId !== knowledgeBaseId) throw notFound('Upload session');
  return { session, link };
}
