// Knowledge document uploads ride on the workspace file upload sessions (file_upload_sessions, the signed
// transfer URLs, the blob store's staging and src/files/uploads.ts); knowledge_upload_sessions adds the target
// base and options. Their control tokens are signed for `kb:<uploadId>`, so the Files operations refuse them
// and vice versa.
import type { Repositories } from '../store/index.ts';
import type { UploadSessionRecord } from '../store/file-uploads.ts';
import { signTransfer, signUploadToken } from '../files/tokens.ts';
import { assertUploadToken } from '../files/uploads.ts';
import { domainNotFound } from '../domain/errors.ts';

export const tokenSubject = (uploadId: string) => `kb:${uploadId}`;

export function signKnowledgeUploadToken(key: Buffer, session: UploadSessionRecord): string {
  return signUploadToken(key, { uploadId: tokenSubject(session.id), workspaceId: session.workspaceId, expiresAt: Date.parse(session.expiresAt) });
}

export function checkKnowledgeUploadToken(key: Buffer, token: string, uploadId: string, workspaceId: string): void {
  assertUploadToken(key, token, tokenSubject(uploadId), workspaceId);
}

/** The signed PUT URL of one part (the same transfer route as workspace file uploads). */
export function partUrl(baseUrl: string, key: Buffer, session: UploadSessionRecord, partNumber: number): string {
  const expires = Date.parse(session.expiresAt);
  return `${baseUrl}/transfers/files/${session.id}/parts/${partNumber}?expires=${expires}&signature=${signTransfer(key, session.id, partNumber, expires)}`;
}

export async function loadKnowledgeSession(repos: Repositories, uploadId: string, workspaceId: string, knowledgeBaseId: string) {
  const session = await repos.fileUploads.get(uploadId);
  const link = session ? await repos.knowledgeUploads.get(uploadId) : undefined;
  if (!session || !link || session.workspaceId !== workspaceId || link.knowledgeBaseId !== knowledgeBaseId) throw domainNotFound('Upload session');
  return { session, link };
}
