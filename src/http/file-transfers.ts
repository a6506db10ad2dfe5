// The two Files routes that are not JSON operations, so they sit beside the generated router rather than in
// the spec pipeline: both carry raw bytes and are authorized by a signature or a share token, not an API key.
//
//   PUT /transfers/files/:uploadId/parts/:partNumber?expires&signature   raw bytes of one upload part (or the
//        whole file for a single-PUT upload), streamed to the blob store's staging area.
//   GET /shared/files/:token   the content of a shared file, while its share is active.
//
// Errors use the documented error body.
import express, { type Request, type Response, type NextFunction, type Router } from 'express';
import { pipeline } from 'node:stream/promises';
import type { Services } from '../services.ts';
import { ApiError, badRequest, forbidden, notFound, conflict } from './errors.ts';
import { BlobSizeError } from '../files/blob-store.ts';
import { checkSharePassword, checkTransfer } from '../files/tokens.ts';
import { essence } from '../files/names.ts';
import { serveContent } from '../files/download.ts';

const issue = (path: string[], message: string) => badRequest(message, [{ code: 'custom', keys: [], path, message }]);

export function fileTransferRoutes(services: Services): Router {
  const router = express.Router();

  router.put('/transfers/files/:uploadId/parts/:partNumber', async (req: Request, res: Response, next: NextFunction) => {
    try {
      const uploadId = String(req.params.uploadId);
      const partNumber = Number(req.params.partNumber);
      const expires = Number(req.query.expires);
      const signature = typeof req.query.signature === 'string' ? req.query.signature : '';
      if (!Number.isSafeInteger(partNumber) || partNumber < 1) throw issue(['params', 'partNumber'], 'The part number must be a whole number from 1.');
      const problem = Number.isSafeInteger(expires) ? checkTransfer(services.signingKey, uploadId, partNumber, expires, signature) : 'malformed';
      if (problem) throw forbidden(problem === 'expired' ? 'The signed upload URL has expired.' : 'The upload URL signature is not valid.', { code: 'INVALID_SIGNATURE', reason: problem });
      const session = await services.store.fileUploads.get(uploadId);
      if (!session) throw notFound('Upload session');
      if (session.status !== 'uploading') throw conflict(`The upload session is ${session.status}.`, { code: 'UPLOAD_NOT_ACTIVE', status: session.status });
      if (Date.parse(session.expiresAt) <= Date.now()) throw conflict('The upload session is expired.', { code: 'UPLOAD_NOT_ACTIVE', status: 'expired' });
      if (partNumber > session.partCount) throw issue(['params', 'partNumber'], `Part numbers run from 1 to ${session.partCount} for this upload.`);
      const sent = req.headers['content-type'];
      if (!sent || essence(sent) !== essence(session.contentType)) {
        throw new ApiError('UNSUPPORTED_MEDIA_TYPE', `Send the bytes with Content-Type ${session.contentType}, as the upload declared.`);
      }
      const expected = partNumber < session.partCount ? session.partSize : session.size - (session.partCount - 1) * session.partSize;
      const declared = req.headers['content-length'];
      if (declared !== undefined && Number(declared) !== expected) {
        throw issue(['headers', 'content-length'], `Part ${partNumber} must be exactly ${expected} bytes; ${declared} were declared.`);
      }
      await services.blobs.writeUploadPart(uploadId, (partNumber - 1) * session.partSize, expected, req);
      await services.store.transaction((tx) => tx.fileUploads.recordPart(uploadId, partNumber, expected));
      res.status(200).setHeader('ETag', `"${uploadId}-${partNumber}"`).end();
    } catch (err) {
      if (err instanceof BlobSizeError) {
        next(issue(['body'], err.kind === 'too_many_bytes' ? `More bytes were sent than the ${err.expected} this part holds.` : err.message));
        return;
      }
      next(err);
    }
  });

  router.get('/shared/files/:token', async (req: Request, res: Response, next: NextFunction) => {
    try {
      const share = await services.store.fileShares.byToken(String(req.params.token));
      // An inactive share is indistinguishable from one that never existed.
      if (!share || !share.isActive) throw notFound('Shared file');
      const file = await services.store.files.get(share.fileId);
      if (!file || file.deletedAt) throw notFound('Shared file');
      if (share.authType === 'password') {
        const password = req.headers['x-share-password'];
        if (typeof password !== 'string' || !share.passwordHash || !checkSharePassword(password, share.passwordHash)) {
          throw new ApiError('UNAUTHORIZED', 'This shared file needs its password in the X-Share-Password header.');
        }
      } else if (share.authType !== 'public') {
        throw forbidden('This shared file is limited to signed-in addresses, which this server cannot check for a link.', { code: 'SHARE_SIGN_IN_REQUIRED' });
      }
      const served = serveContent(services.blobs, { blobKey: file.blobKey, size: file.size, contentType: file.contentType, name: file.name }, req.headers.range);
      res.status(served.status);
      for (const [k, v] of Object.entries(served.headers)) res.setHeader(k, v);
      await pipeline(served.stream, res);
    } catch (err) {
      next(err);
    }
  });

  return router;
}
