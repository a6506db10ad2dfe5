import type { SqlExecutor } from './database.ts';

export interface User {
  id: string;
  email: string;
  name: string;
  image: string | null;
  createdAt: string;
  updatedAt: string;
}

interface UserRow {
  id: string;
  email: string;
  name: string;
  image: string | null;
  created_at: string;
  updated_at: string;
}

const toUser = (r: UserRow): User => ({
  id: r.id,
  email: r.email,
  name: r.name,
  image: r.image,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class UserRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(user: User): Promise<void> {
    await this.db.run('INSERT INTO users (id, email, name, image, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', [
      user.id,
      user.email,
      user.name,
      user.image,
      user.createdAt,
      user.updatedAt,
    ]);
  }

  async get(id: string): Promise<User | undefined> {
    const r = await this.db.get<UserRow>('SELECT * FROM users WHERE id = ?', [id]);
    return r && toUser(r);
  }

  /** E-mail addresses match whatever their ASCII case, through an index on lower(email) on both engines. */
  async getByEmail(email: string): Promise<User | undefined> {
    const r = await this.db.get<UserRow>('SELECT * FROM users WHERE lower(email) = lower(?)', [email]);
    return r && toUser(r);
  }

  /** Every user, oldest first (the admin command's `user list`). */
  async list(): Promise<User[]> {
    return (await this.db.all<UserRow>('SELECT * FROM users ORDER BY created_at, id')).map(toUser);
  }

  async count(): Promise<number> {
    const r = await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM users');
    return Number(r?.n ?? 0);
  }
}
