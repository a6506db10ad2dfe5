// Conversations of the workspace agent chat: who holds each one, and the messages exchanged (the person's messages
// and the agent's replies, in order; tool round trips stay within their turn and are not kept).
import type { SqlExecutor } from './database.ts';
import { limitClause } from './keyset.ts';

export interface AgentConversationRecord {
  id: string;
  workspaceId: string;
  userId: string;
  createdAt: string;
  updatedAt: string;
}

export interface AgentMessageRecord {
  seq: number;
  role: 'user' | 'assistant';
  content: string;
  createdAt: string;
}

export class AgentConversationRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async get(id: string): Promise<AgentConversationRecord | undefined> {
    const r = await this.db.get<Record<string, string>>('SELECT * FROM agent_conversations WHERE id = ?', [id]);
    return r ? { id: r.id!, workspaceId: r.workspace_id!, userId: r.user_id!, createdAt: r.created_at!, updatedAt: r.updated_at! } : undefined;
  }

  async insert(c: AgentConversationRecord): Promise<void> {
    await this.db.run('INSERT INTO agent_conversations (id, workspace_id, user_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [c.id, c.workspaceId, c.userId, c.createdAt, c.updatedAt]);
  }

  /** The newest `limit` messages, oldest first. */
  async recentMessages(conversationId: string, limit: number): Promise<AgentMessageRecord[]> {
    const rows = await this.db.all<{ seq: number; role: 'user' | 'assistant'; content: string; created_at: string }>(
      `SELECT seq, role, content, created_at FROM agent_conversation_messages WHERE conversation_id = ? ORDER BY seq DESC ${limitClause(limit)}`,
      [conversationId],
    );
    return rows.reverse().map((r) => ({ seq: Number(r.seq), role: r.role, content: r.content, createdAt: r.created_at }));
  }

  /** Appends messages after the last one and marks the conversation updated. */
  async append(conversationId: string, messages: { role: 'user' | 'assistant'; content: string }[], now: string): Promise<void> {
    const last = await this.db.get<{ seq: number | null }>('SELECT MAX(seq) AS seq FROM agent_conversation_messages WHERE conversation_id = ?', [conversationId]);
    let seq = Number(last?.seq ?? 0);
    for (const m of messages) {
      seq++;
      await this.db.run('INSERT INTO agent_conversation_messages (conversation_id, seq, role, content, created_at) VALUES (?, ?, ?, ?, ?)', [conversationId, seq, m.role, m.content, now]);
    }
    await this.db.run('UPDATE agent_conversations SET updated_at = ? WHERE id = ?', [now, conversationId]);
  }
}
