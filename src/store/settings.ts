import type { SqlExecutor } from './database.ts';

/** Small server-wide values: the signing secret, the credential revocation epoch. */
export class SettingsRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async get(key: string): Promise<string | undefined> {
    return (await this.db.get<{ value: string }>('SELECT value FROM settings WHERE key = ?', [key]))?.value;
  }

  async set(key: string, value: string): Promise<void> {
    await this.db.run('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
  }

  /** Sets the value only when the key is new; returns whichever value is stored afterwards. */
  async getOrInit(key: string, value: string): Promise<string> {
    await this.db.run('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING', [key, value]);
    return (await this.get(key))!;
  }

  async increment(key: string): Promise<void> {
    await this.db.run(
      "INSERT INTO settings (key, value) VALUES (?, '1') ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(settings.value AS INTEGER) + 1 AS TEXT)",
      [key],
    );
  }
}
