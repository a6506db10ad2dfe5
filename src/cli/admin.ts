// `npm run admin -- <resource> <action> [--flags]`: manage users, workspaces, memberships and keys directly
// in the store. Prints JSON on stdout; on failure prints {"error": ...} on stderr and exits 1.
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.ts';
import { openSqliteStore, type Store } from '../store/index.ts';
import {
  IdentityError,
  createApiKey,
  createUser,
  createWorkspace,
  removeMember,
  revokeApiKey,
  setMember,
  setPersonalKeysAllowed,
} from '../identity/admin.ts';

const USAGE = `Usage: npm run admin -- <command> [options]

  user create --email <email> [--name <name>]
  workspace create --name <name> --owner <userId>
  workspace personal-keys --workspace <id> --allow <true|false>
  member set --workspace <id> --user <userId> --role <admin|write|read>
  member remove --workspace <id> --user <userId>
  key create --user <userId> [--workspace <id>] [--name <name>] [--expires <ISO date>]
             (with --workspace: a workspace key, which only that workspace's admins may create)
  key revoke --id <keyId>

The database is the one the server uses: DATA_DIR (default ./data) or DATABASE_FILE.`;

const OPTIONS = {
  email: { type: 'string' },
  name: { type: 'string' },
  owner: { type: 'string' },
  workspace: { type: 'string' },
  user: { type: 'string' },
  role: { type: 'string' },
  id: { type: 'string' },
  expires: { type: 'string' },
  allow: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Flags = Partial<Record<keyof typeof OPTIONS, string | boolean>>;

function required(flags: Flags, name: keyof typeof OPTIONS): string {
  const v = flags[name];
  if (typeof v !== 'string' || v === '') throw new IdentityError(`--${name} is required`);
  return v;
}

async function run(store: Store, command: string, flags: Flags): Promise<unknown> {
  switch (command) {
    case 'user create':
      return createUser(store, { email: required(flags, 'email'), name: flags.name as string | undefined });
    case 'workspace create':
      return createWorkspace(store, { name: required(flags, 'name'), ownerId: required(flags, 'owner') });
    case 'workspace personal-keys': {
      const allow = required(flags, 'allow');
      if (allow !== 'true' && allow !== 'false') throw new IdentityError('--allow must be true or false');
      const workspaceId = required(flags, 'workspace');
      await setPersonalKeysAllowed(store, workspaceId, allow === 'true');
      return { workspaceId, personalKeysAllowed: allow === 'true' };
    }
    case 'member set': {
      const role = required(flags, 'role');
      if (!['admin', 'write', 'read'].includes(role)) throw new IdentityError('--role must be admin, write or read');
      const input = { workspaceId: required(flags, 'workspace'), userId: required(flags, 'user'), role: role as 'admin' | 'write' | 'read' };
      await setMember(store, input);
      return input;
    }
    case 'member remove': {
      const input = { workspaceId: required(flags, 'workspace'), userId: required(flags, 'user') };
      await removeMember(store, input);
      return { ...input, removed: true };
    }
    case 'key create': {
      const workspaceId = flags.workspace as string | undefined;
      const issued = await createApiKey(store, {
        kind: workspaceId ? 'workspace' : 'personal',
        userId: required(flags, 'user'),
        workspaceId,
        name: flags.name as string | undefined,
        expiresAt: (flags.expires as string | undefined) ?? null,
      });
      return { ...issued.record, key: issued.key };
    }
    case 'key revoke': {
      const id = required(flags, 'id');
      await revokeApiKey(store, id);
      return { id, revoked: true };
    }
    default:
      throw new IdentityError(`Unknown command "${command}".\n${USAGE}`);
  }
}

export async function main(argv: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    process.stderr.write(JSON.stringify({ error: (err as Error).message }) + '\n');
    process.exit(1);
  }
  if (parsed.values.help || parsed.positionals.length === 0) {
    process.stdout.write(USAGE + '\n');
    return;
  }
  const store = await openSqliteStore(loadConfig().databaseFile);
  try {
    const result = await run(store, parsed.positionals.join(' '), parsed.values as Flags);
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } catch (err) {
    const message = err instanceof IdentityError ? err.message : `Unexpected failure: ${(err as Error).message}`;
    process.stderr.write(JSON.stringify({ error: message }) + '\n');
    process.exitCode = 1;
  } finally {
    await store.close();
  }
}
