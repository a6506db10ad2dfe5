// Files a run produced (a function returning a file, an API response with a binary body); content in the blob store.
import type { SqlExecutor } from './database.ts';

export interface RunFileRecord {
  id: string;
  runId: string;
  workflowId: string;
  workspaceId: string;
  blockId: string | null;
  name: string;
  contentType: string;
  size: number;
  blobKey: string;
  createdAt: string;
}

interface Row {
  id: string;
  run_id: string;
  workflow_id: string;
  workspace_id: string;
  block_id: string | null;
  name: string;
  content_type: string;
  size: number;
  blob_key: string;
  created_at: string;
}

const toRecord = (r: Row): RunFileRecord => ({
  id: r.id,
  runId: r.run_id,
  workflowId: r.workflow_id,
  workspaceId: r.workspace_id,
  blockId: r.block_id,
  name: r.name,
  contentType: r.content_type,
  size: Number(r.size),
  blobKey: r.blob_key,
  createdAt: r.created_at,
});

export class RunFileRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(f: RunFileRecord): Promise<void> {
    await this.db.run(
      'INSERT INTO run_files (id, run_id, workflow_id, workspace_id, block_id, name, content_type, size, blob_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [f.id, f.runId, f.workflowId, f.workspaceId, f.blockId, f.name, f.contentType, f.size, f.blobKey, f.createdAt],
    );
  }

  async forRun(runId: string): Promise<RunFileRecord[]> {
    return (await this.db.all<Row>('SELECT * FROM run_files WHERE run_id = ? ORDER BY created_at, id', [runId])).map(toRecord);
  }

  async get(runId: string, id: string): Promise<RunFileRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM run_files WHERE run_id = ? AND id = ?', [runId, id]);
    return r && toRecord(r);
  }

  /** Blob keys referenced by run files (the purge job must keep them). */
  async blobKeys(): Promise<string[]> {
    return (await this.db.all<{ blob_key: string }>('SELECT DISTINCT blob_key FROM run_files')).map((r) => r.blob_key);
  }
}
