// Ids of knowledge records that more than one module mints: documents are created by uploads (the service,
// via the handlers) and by connector syncs (sync.ts), which must not import the service that runs them.
import { randomUUID } from 'node:crypto';

export const newDocumentId = () => `kd_${randomUUID().replace(/-/g, '')}`;
