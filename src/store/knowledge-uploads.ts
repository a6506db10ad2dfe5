// What a knowledge document upload adds to a file upload session (file_upload_sessions holds the transfer):
// the target base, the document's options, and the document it became.
import type { SqlExecutor } from './database.ts';

export interface KnowledgeUploadRecord {
  uploadId: string;
  knowledgeBaseId: string;
  /** JSON: tag values and processing options given when the upload started. */
  options: string;
  documentId: string | null;
}

interface Row {
  upload_id: string;
  knowledge_base_id: string;
  options: string;
  document_id: string | null;
}

export class KnowledgeUploadRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(u: KnowledgeUploadRecord): Promise<void> {
    await this.db.run('INSERT INTO knowledge_upload_sessions (upload_id, knowledge_base_id, options, document_id) VALUES (?, ?, ?, ?)', [
      u.uploadId, u.knowledgeBaseId, u.options, u.documentId,
    ]);
  }

  async get(uploadId: string): Promise<KnowledgeUploadRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM knowledge_upload_sessions WHERE upload_id = ?', [uploadId]);
    return r && { uploadId: r.upload_id, knowledgeBaseId: r.knowledge_base_id, options: r.options, documentId: r.document_id };
  }

  async setDocument(uploadId: string, documentId: string): Promise<void> {
    await this.db.run('UPDATE knowledge_upload_sessions SET document_id = ? WHERE upload_id = ?', [documentId, uploadId]);
  }
}
