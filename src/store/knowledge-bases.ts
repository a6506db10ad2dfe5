// Knowledge bases and their tag definitions.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export interface KnowledgeBaseRecord {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  /** Canonical decoded folder path; '/' for the root. */
  folderPath: string;
  /** The chunking configuration as stored JSON (defaults already applied). */
  chunkingConfig: string;
  embeddingModel: string;
  embeddingDimension: number;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
}

interface Row {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  folder_path: string;
  chunking_config: string;
  embedding_model: string;
  embedding_dimension: number;
  created_by: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

const toRecord = (r: Row): KnowledgeBaseRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  name: r.name,
  description: r.description,
  folderPath: r.folder_path,
  chunkingConfig: r.chunking_config,
  embeddingModel: r.embedding_model,
  embeddingDimension: Number(r.embedding_dimension),
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  deletedAt: r.deleted_at,
});

export const KB_SORT_COLUMNS = { name: 'name', createdAt: 'created_at', updatedAt: 'updated_at' } as const;

export interface KnowledgeBaseStats {
  docCount: number;
  tokenCount: number;
}

export interface TagDefinitionRecord {
  id: string;
  knowledgeBaseId: string;
  tagSlot: string;
  displayName: string;
  fieldType: 'text' | 'number' | 'date' | 'boolean';
  createdAt: string;
  updatedAt: string;
}

interface TagRow {
  id: string;
  knowledge_base_id: string;
  tag_slot: string;
  display_name: string;
  field_type: TagDefinitionRecord['fieldType'];
  created_at: string;
  updated_at: string;
}

const toTag = (r: TagRow): TagDefinitionRecord => ({
  id: r.id,
  knowledgeBaseId: r.knowledge_base_id,
  tagSlot: r.tag_slot,
  displayName: r.display_name,
  fieldType: r.field_type,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class KnowledgeBaseRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(kb: KnowledgeBaseRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO knowledge_bases (id, workspace_id, name, description, folder_path, chunking_config, embedding_model, embedding_dimension,
         created_by, created_at, updated_at, deleted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [kb.id, kb.workspaceId, kb.name, kb.description, kb.folderPath, kb.chunkingConfig, kb.embeddingModel, kb.embeddingDimension, kb.createdBy,
        kb.createdAt, kb.updatedAt, kb.deletedAt],
    );
  }

  async get(id: string): Promise<KnowledgeBaseRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM knowledge_bases WHERE id = ?', [id]);
    return r && toRecord(r);
  }

  async getMany(ids: readonly string[]): Promise<KnowledgeBaseRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.all<Row>(`SELECT * FROM knowledge_bases WHERE id IN (${ids.map(() => '?').join(', ')})`, ids);
    return rows.map(toRecord);
  }

  async update(id: string, fields: Partial<Pick<KnowledgeBaseRecord, 'name' | 'description' | 'folderPath' | 'chunkingConfig' | 'deletedAt'>> & { updatedAt: string }): Promise<void> {
    const columns: Record<string, string> = { name: 'name', description: 'description', folderPath: 'folder_path', chunkingConfig: 'chunking_config', deletedAt: 'deleted_at', updatedAt: 'updated_at' };
    const sets: string[] = [];
    const params: SqlValue[] = [];
    for (const [k, v] of Object.entries(fields)) {
      if (v === undefined) continue;
      sets.push(`${columns[k]} = ?`);
      params.push(v as SqlValue);
    }
    await this.db.run(`UPDATE knowledge_bases SET ${sets.join(', ')} WHERE id = ?`, [...params, id]);
  }

  async list(q: {
    workspaceId: string;
    archived: boolean;
    folderPath: string | null;
    search: string | null;
    sortBy: keyof typeof KB_SORT_COLUMNS;
    order: 'asc' | 'desc';
    after: readonly [SqlValue, string] | null;
    limit: number;
  }): Promise<KnowledgeBaseRecord[]> {
    const column = KB_SORT_COLUMNS[q.sortBy];
    const ks = keyset({ column, idColumn: 'id', order: q.order, after: q.after, limit: q.limit });
    const where = ['workspace_id = ?', q.archived ? 'deleted_at IS NOT NULL' : 'deleted_at IS NULL'];
    const params: SqlValue[] = [q.workspaceId];
    if (q.folderPath !== null) {
      where.push('folder_path = ?');
      params.push(q.folderPath);
    }
    if (q.search !== null) {
      where.push(this.db.dialect.contains('lower(name)', 'lower(?)'));
      params.push(q.search);
    }
    const rows = await this.db.all<Row>(
      `SELECT * FROM knowledge_bases WHERE ${where.join(' AND ')} AND ${ks.where} ORDER BY ${ks.orderBy} ${limitClause(q.limit)}`,
      [...params, ...ks.whereParams],
    );
    return rows.map(toRecord);
  }

  async countInSubtree(workspaceId: string, path: string): Promise<number> {
    const r = await this.db.get<{ n: number }>(
      'SELECT COUNT(*) AS n FROM knowledge_bases WHERE workspace_id = ? AND deleted_at IS NULL AND (folder_path = ? OR substr(folder_path, 1, ?) = ?)',
      [workspaceId, path, path.length + 1, path + '/'],
    );
    return Number(r?.n ?? 0);
  }

  /** Archives every active base in the folder or below it; returns their ids. */
  async archiveSubtree(workspaceId: string, path: string, now: string): Promise<string[]> {
    const rows = await this.db.all<{ id: string }>(
      'SELECT id FROM knowledge_bases WHERE workspace_id = ? AND deleted_at IS NULL AND (folder_path = ? OR substr(folder_path, 1, ?) = ?)',
      [workspaceId, path, path.length + 1, path + '/'],
    );
    for (const r of rows) await this.db.run('UPDATE knowledge_bases SET deleted_at = ?, updated_at = ? WHERE id = ?', [now, now, r.id]);
    return rows.map((r) => r.id);
  }

  /** The bases a folder delete archived: in the folder or below it, archived at the folder's own archive time. */
  async archivedWithFolder(workspaceId: string, path: string, archivedAt: string): Promise<KnowledgeBaseRecord[]> {
    const rows = await this.db.all<Row>(
      'SELECT * FROM knowledge_bases WHERE workspace_id = ? AND deleted_at = ? AND (folder_path = ? OR substr(folder_path, 1, ?) = ?)',
      [workspaceId, archivedAt, path, path.length + 1, path + '/'],
    );
    return rows.map(toRecord);
  }

  /** Rewrites the folder of every base (active or archived) in a moved subtree. */
  async relocateSubtree(workspaceId: string, from: string, to: string, now: string): Promise<void> {
    await this.db.run(
      `UPDATE knowledge_bases SET folder_path = ? || substr(folder_path, ?), updated_at = ?
       WHERE workspace_id = ? AND (folder_path = ? OR substr(folder_path, 1, ?) = ?)`,
      [to, from.length + 1, now, workspaceId, from, from.length + 1, from + '/'],
    );
  }

  /** Completed documents and the tokens of their chunks, per base. */
  async stats(ids: readonly string[]): Promise<Map<string, KnowledgeBaseStats>> {
    const out = new Map<string, KnowledgeBaseStats>(ids.map((id) => [id, { docCount: 0, tokenCount: 0 }]));
    if (ids.length === 0) return out;
    const rows = await this.db.all<{ kb: string; docs: number; tokens: number | null }>(
      `SELECT knowledge_base_id AS kb, COUNT(*) AS docs, SUM(CASE WHEN processing_status = 'completed' THEN token_count ELSE 0 END) AS tokens
         FROM knowledge_documents WHERE knowledge_base_id IN (${ids.map(() => '?').join(', ')}) GROUP BY knowledge_base_id`,
      ids,
    );
    for (const r of rows) out.set(r.kb, { docCount: Number(r.docs), tokenCount: Number(r.tokens ?? 0) });
    return out;
  }

  // ── tag definitions

  async tags(knowledgeBaseId: string): Promise<TagDefinitionRecord[]> {
    const rows = await this.db.all<TagRow>('SELECT * FROM knowledge_tag_definitions WHERE knowledge_base_id = ? ORDER BY created_at, rowid', [knowledgeBaseId]);
    return rows.map(toTag);
  }

  async tagsOf(ids: readonly string[]): Promise<TagDefinitionRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.all<TagRow>(`SELECT * FROM knowledge_tag_definitions WHERE knowledge_base_id IN (${ids.map(() => '?').join(', ')})`, ids);
    return rows.map(toTag);
  }

  async insertTag(t: TagDefinitionRecord): Promise<void> {
    await this.db.run(
      'INSERT INTO knowledge_tag_definitions (id, knowledge_base_id, tag_slot, display_name, field_type, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [t.id, t.knowledgeBaseId, t.tagSlot, t.displayName, t.fieldType, t.createdAt, t.updatedAt],
    );
  }

  async updateTag(id: string, fields: { displayName?: string; fieldType?: string; tagSlot?: string; updatedAt: string }): Promise<void> {
    await this.db.run(
      'UPDATE knowledge_tag_definitions SET display_name = COALESCE(?, display_name), field_type = COALESCE(?, field_type), tag_slot = COALESCE(?, tag_slot), updated_at = ? WHERE id = ?',
      [fields.displayName ?? null, fields.fieldType ?? null, fields.tagSlot ?? null, fields.updatedAt, id],
    );
  }

  async deleteTag(id: string): Promise<void> {
    await this.db.run('DELETE FROM knowledge_tag_definitions WHERE id = ?', [id]);
  }
}
