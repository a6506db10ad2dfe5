// `npm run -s admin -- <resource> <action> [--flags]`: manage users, workspaces, memberships and keys directly
// in the store. Prints JSON on stdout; on failure prints {"error": ...} on stderr and exits 1.
//
// It may run while a server is serving the same DATA_DIR: it does not take the server's data directory lock,
// each command is one short transaction (SQLite serializes it with the server's writes), and it never touches
// claimed work (runs, documents and jobs are leased by the server executing them).
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { openConfiguredStore, type Repositories, type Store } from '../store/index.ts';
import {
  IdentityError,
  createApiKey,
  createUser,
  createWorkspace,
  removeMember,
  revokeApiKey,
  setMember,
  setPersonalKeysAllowed,
  setWorkspacePlan,
} from '../identity/admin.ts';
import { createOAuthClient, issueTokens, parseScopes, refreshTokens, revokeApplication, revokeOAuthGrant, revokeOAuthToken } from '../identity/oauth.ts';
import { PLANS, type Plan } from '../store/billing-accounts.ts';
import { setUserPassword } from '../identity/web-session.ts';
import { SecretCipher, loadSecretsKey } from '../secrets/cipher.ts';
import { setTableLocks, TableLockError } from '../tables/locks.ts';
import type { TableLocks } from '../store/user-tables.ts';
import { SecretError, SecretVault, deleteSecretAsOperator, setSecretAsOperator } from '../secrets/vault.ts';
import { syncTableRowLimits } from '../tables/service.ts';
import { BackupError, createBackup, restoreBackup } from '../ops/backup.ts';
import { MigrationRefused, migrateToPostgres } from '../ops/migrate-to-postgres.ts';
import { DataDirLockedError } from '../store/data-dir-lock.ts';
import { addOrganizationMember, attachWorkspace, createOrganization, detachWorkspace } from '../organizations/organizations.ts';
import { DomainError } from '../domain/errors.ts';
import { recordAudit } from '../audit/recorder.ts';

/** The organization rules speak in domain errors; the admin command reports every refusal the same way. */
async function asIdentityError<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof DomainError) throw new IdentityError(err.message);
    throw err;
  }
}

/** Operator changes to organizations are audited like every other, with the admin command as the actor. */
const auditOrg = (tx: Repositories, action: string, organizationId: string, metadata: Record<string, unknown>) =>
  recordAudit(tx, null, null, { action, resourceType: 'organization', resourceId: organizationId, metadata });

const USAGE = `Usage: npm run -s admin -- <command> [options]

  user create --email <email> [--name <name>]
  user list                                            (ids, e-mails, names)
  user password (--user <userId> | --email <email>) (--password <password> | --password-stdin)
             (sets or resets the sign-in password, 12 to 1024 characters; ends the user's browser sessions)
  workspace create --name <name> --owner <userId>
  workspace personal-keys --workspace <id> --allow <true|false>
  workspace plan --workspace <id> --plan <free|pro|team|max|enterprise>   (the plan of its billing account)
  member set --workspace <id> --user <userId> --role <admin|write|read>
  member remove --workspace <id> --user <userId>
  organization create --name <name> --owner <userId> [--slug <slug>] [--plan <plan>]
             (the owner may belong to no other organization; the plan defaults to the owner's own)
  organization list                                    (ids, names, slugs, owners)
  organization member add --organization <id> --user <userId> [--role member|admin]
  organization workspace add --organization <id> --workspace <id>
             (the workspace then bills to the organization; its owner must be a member)
  organization workspace remove --workspace <id>       (back to a personal workspace of its owner)
  key create --user <userId> [--workspace <id>] [--name <name>] [--expires <ISO date>]
             (with --workspace: a workspace key, which only that workspace's admins may create)
  key revoke --id <keyId>
  key list [--user <userId>]                           (never the secret: id, kind, owner, suffix, dates)
  oauth app create --name <name>
  oauth token issue --app <appId> --user <userId> --scopes "api:read offline_access" [--ttl <seconds>]
  oauth token refresh --refresh-token <token> [--ttl <seconds>]
  oauth token revoke --id <tokenId>
  oauth grant revoke --id <grantId>
  oauth app revoke --app <appId> --user <userId>       (ends every token the user gave the app)
  secret set --workspace <id> --name <NAME> --value <value> [--user <userId>] [--description <text>]
             (with --user: that member's personal secret; runs resolve {{NAME}} personal first, then workspace)
  secret delete --workspace <id> --name <NAME> [--user <userId>]
  table lock --table <tableId> [--preset none|append-only|read-only] [--schema true|false] [--insert true|false]
             [--update true|false] [--delete true|false]   (423 LOCKED for the verbs a lock guards; reads never)
  backup --to <dir>        a consistent copy of the data (database, file bytes, secrets key, manifest) into a
                           new or empty directory, also while a server is running and writing
  restore --from <dir>     a backup into an empty DATA_DIR (checked against its manifest first); then start the server
  migrate-to-postgres --to <postgres://…>
                           copies the SQLite database of a stopped server (DATA_DIR or DATABASE_FILE) into an empty
                           Postgres database, table by table, and checks the row counts; then says what to do with
                           the file bytes and the secrets key (every server must share both)

The database is the one the server uses: DATA_DIR (default ./data) or DATABASE_FILE.`;

const OPTIONS = {
  email: { type: 'string' },
  name: { type: 'string' },
  owner: { type: 'string' },
  workspace: { type: 'string' },
  organization: { type: 'string' },
  slug: { type: 'string' },
  user: { type: 'string' },
  role: { type: 'string' },
  id: { type: 'string' },
  expires: { type: 'string' },
  allow: { type: 'string' },
  plan: { type: 'string' },
  app: { type: 'string' },
  scopes: { type: 'string' },
  ttl: { type: 'string' },
  'refresh-token': { type: 'string' },
  value: { type: 'string' },
  description: { type: 'string' },
  password: { type: 'string' },
  'password-stdin': { type: 'boolean' },
  table: { type: 'string' },
  preset: { type: 'string' },
  schema: { type: 'string' },
  insert: { type: 'string' },
  update: { type: 'string' },
  delete: { type: 'string' },
  to: { type: 'string' },
  from: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Flags = Partial<Record<keyof typeof OPTIONS, string | boolean>>;

function required(flags: Flags, name: keyof typeof OPTIONS): string {
  const v = flags[name];
  if (typeof v !== 'string' || v === '') throw new IdentityError(`--${name} is required`);
  return v;
}

/** --ttl in seconds; negative values issue tokens that are already expired (for testing clients). */
function ttl(flags: Flags): number | undefined {
  if (flags.ttl === undefined) return undefined;
  const n = Number(flags.ttl);
  if (!Number.isInteger(n) || n === 0) throw new IdentityError('--ttl must be a whole, non-zero number of seconds');
  return n;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function run(store: Store, command: string, flags: Flags): Promise<unknown> {
  switch (command) {
    case 'user list':
      return (await store.users.list()).map(({ id, email, name, createdAt }) => ({ id, email, name, createdAt }));
    case 'key list': {
      const user = flags.user as string | undefined;
      const keys = user ? await store.apiKeys.listForUser(user) : await store.apiKeys.list();
      const now = Date.now();
      return keys.map(({ keyHash: _secret, ...k }) => ({
        ...k,
        active: k.revokedAt === null && (k.expiresAt === null || Date.parse(k.expiresAt) > now),
      }));
    }
    case 'user create':
      return createUser(store, { email: required(flags, 'email'), name: flags.name as string | undefined });
    case 'user password': {
      const user = flags.user ? await store.users.get(flags.user as string) : flags.email ? await store.users.getByEmail(flags.email as string) : undefined;
      if (!flags.user && !flags.email) throw new IdentityError('--user or --email is required');
      if (!user) throw new IdentityError(`No user ${String(flags.user ?? flags.email)}`);
      const password = flags['password-stdin'] ? (await readStdin()).replace(/\r?\n$/, '') : required(flags, 'password');
      await setUserPassword(store, user.id, password);
      return { userId: user.id, email: user.email, passwordSet: true };
    }
    case 'workspace create':
      return createWorkspace(store, { name: required(flags, 'name'), ownerId: required(flags, 'owner') });
    case 'workspace personal-keys': {
      const allow = required(flags, 'allow');
      if (allow !== 'true' && allow !== 'false') throw new IdentityError('--allow must be true or false');
      const workspaceId = required(flags, 'workspace');
      await setPersonalKeysAllowed(store, workspaceId, allow === 'true');
      return { workspaceId, personalKeysAllowed: allow === 'true' };
    }
    case 'workspace plan': {
      const plan = required(flags, 'plan');
      if (!PLANS.includes(plan as Plan)) throw new IdentityError(`--plan must be one of ${PLANS.join(', ')}`);
      const workspaceId = required(flags, 'workspace');
      await setWorkspacePlan(store, workspaceId, plan as Plan);
      // Tables take the new plan's row limit now (a running server reads it from the database).
      await syncTableRowLimits(store, loadConfig().tables.perPlan);
      return { workspaceId, plan };
    }
    case 'oauth app create':
      return createOAuthClient(store, required(flags, 'name'));
    case 'oauth token issue':
      return issueTokens(store, {
        clientId: required(flags, 'app'),
        userId: required(flags, 'user'),
        scopes: parseScopes(required(flags, 'scopes')),
        accessTtlSeconds: ttl(flags),
      });
    case 'oauth token refresh':
      return refreshTokens(store, required(flags, 'refresh-token'), ttl(flags));
    case 'oauth token revoke': {
      const id = required(flags, 'id');
      await revokeOAuthToken(store, id);
      return { id, revoked: true };
    }
    case 'oauth grant revoke': {
      const id = required(flags, 'id');
      await revokeOAuthGrant(store, id);
      return { id, revoked: true };
    }
    case 'oauth app revoke': {
      const revoked = await revokeApplication(store, required(flags, 'app'), required(flags, 'user'));
      return { grantsRevoked: revoked };
    }
    case 'secret set': {
      const config = loadConfig();
      const vault = new SecretVault(store, new SecretCipher(loadSecretsKey(config.secretsKey, config.dataDir)));
      const user = flags.user as string | undefined;
      return setSecretAsOperator(store, vault, {
        workspaceId: required(flags, 'workspace'),
        scope: user ? 'personal' : 'workspace',
        ownerUserId: user ?? null,
        name: required(flags, 'name'),
        value: required(flags, 'value'),
        description: flags.description as string | undefined,
      });
    }
    case 'secret delete': {
      const user = flags.user as string | undefined;
      const input = { workspaceId: required(flags, 'workspace'), scope: user ? ('personal' as const) : ('workspace' as const), ownerUserId: user ?? null, name: required(flags, 'name') };
      await deleteSecretAsOperator(store, input);
      return { ...input, deleted: true };
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
    case 'organization create': {
      const plan = flags.plan as string | undefined;
      if (plan !== undefined && !PLANS.includes(plan as Plan)) throw new IdentityError(`--plan must be one of ${PLANS.join(', ')}`);
      return asIdentityError(
        store.transaction(async (tx) => {
          const org = await createOrganization(tx, { name: required(flags, 'name'), ownerId: required(flags, 'owner'), slug: flags.slug as string | undefined, plan: plan as Plan | undefined });
          await auditOrg(tx, 'organization.created', org.id, { name: org.name, ownerId: required(flags, 'owner') });
          return org;
        }),
      );
    }
    case 'organization list':
      return store.organizations.listAll();
    case 'organization member add': {
      const role = (flags.role as string | undefined) ?? 'member';
      if (role !== 'member' && role !== 'admin') throw new IdentityError('--role must be member or admin');
      const input = { organizationId: required(flags, 'organization'), userId: required(flags, 'user'), role };
      await asIdentityError(
        store.transaction(async (tx) => {
          if (!(await tx.organizations.get(input.organizationId))) throw new IdentityError(`No organization ${input.organizationId}`);
          await addOrganizationMember(tx, input.organizationId, input.userId, role, new Date().toISOString());
          await auditOrg(tx, 'organization.member_added', input.organizationId, { userId: input.userId, role });
        }),
      );
      return input;
    }
    case 'organization workspace add': {
      const input = { organizationId: required(flags, 'organization'), workspaceId: required(flags, 'workspace') };
      await asIdentityError(
        store.transaction(async (tx) => {
          await attachWorkspace(tx, input.organizationId, input.workspaceId);
          await auditOrg(tx, 'organization.workspace_added', input.organizationId, { workspaceId: input.workspaceId });
        }),
      );
      return { ...input, billingAccountId: (await store.workspaces.get(input.workspaceId))!.billingAccountId };
    }
    case 'organization workspace remove': {
      const workspaceId = required(flags, 'workspace');
      const organizationId = await store.organizations.organizationOfWorkspace(workspaceId);
      if (!organizationId) throw new IdentityError(`Workspace ${workspaceId} belongs to no organization`);
      await asIdentityError(
        store.transaction(async (tx) => {
          await detachWorkspace(tx, workspaceId);
          await auditOrg(tx, 'organization.workspace_removed', organizationId, { workspaceId });
        }),
      );
      return { workspaceId, organizationId: null };
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
    case 'table lock': {
      const flags_: Partial<TableLocks> = {};
      for (const [flag, field] of [['schema', 'schemaLocked'], ['insert', 'insertLocked'], ['update', 'updateLocked'], ['delete', 'deleteLocked']] as const) {
        const v = flags[flag];
        if (v === undefined) continue;
        if (v !== 'true' && v !== 'false') throw new TableLockError(`--${flag} must be true or false`);
        flags_[field] = v === 'true';
      }
      return setTableLocks(store, required(flags, 'table'), { preset: flags.preset as string | undefined, flags: flags_ });
    }
    default:
      throw new IdentityError(`Unknown command "${command}".\n${USAGE}`);
  }
}

export async function main(argv: string[]): Promise<void> {
  // The database (and a secrets key it creates) stay owner-only, like the server's.
  process.umask(0o077);
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
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(JSON.stringify({ error: `Configuration error: ${err.message}` }) + '\n');
    process.exit(2);
  }
  const command = parsed.positionals.join(' ');
  if ((command === 'backup' || command === 'restore') && config.databaseUrl) {
    process.stderr.write(JSON.stringify({ error: `${command} copies a SQLite DATA_DIR; with DATABASE_URL set, back up the Postgres database with its own tools (pg_dump, or the provider's snapshots)` }) + '\n');
    process.exit(2);
  }
  if (command === 'migrate-to-postgres') {
    await migrateCommand(parsed.values as Flags, config);
    return;
  }
  if (command === 'backup' || command === 'restore') {
    await backupCommand(command, parsed.values as Flags, config);
    return;
  }
  const store = await openConfiguredStore(config);
  try {
    const result = await run(store, command, parsed.values as Flags);
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } catch (err) {
    const message = err instanceof IdentityError || err instanceof SecretError || err instanceof TableLockError ? err.message : `Unexpected failure: ${(err as Error).message}`;
    process.stderr.write(JSON.stringify({ error: message }) + '\n');
    process.exitCode = 1;
  } finally {
    await store.close();
  }
}

/** Backup and restore work on the files, not through a store: restore must not create a database first. */
async function backupCommand(command: 'backup' | 'restore', flags: Flags, config: ReturnType<typeof loadConfig>): Promise<void> {
  try {
    const result =
      command === 'backup'
        ? await createBackup(config, required(flags, 'to'))
        : await restoreBackup(required(flags, 'from'), config);
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } catch (err) {
    const message = err instanceof BackupError || err instanceof IdentityError ? err.message : `Unexpected failure: ${(err as Error).message}`;
    process.stderr.write(JSON.stringify({ error: message }) + '\n');
    process.exitCode = 1;
  }
}

/** The copy reads the SQLite file itself (DATA_DIR or DATABASE_FILE), whatever DATABASE_URL says. */
async function migrateCommand(flags: Flags, config: ReturnType<typeof loadConfig>): Promise<void> {
  try {
    const result = await migrateToPostgres(config, required(flags, 'to'));
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } catch (err) {
    const known = err instanceof MigrationRefused || err instanceof IdentityError || err instanceof DataDirLockedError;
    process.stderr.write(JSON.stringify({ error: known ? (err as Error).message : `Unexpected failure: ${(err as Error).message}` }) + '\n');
    process.exitCode = 1;
  }
}
