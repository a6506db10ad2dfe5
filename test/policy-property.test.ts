// Property tests: the authorization decision matches a model of the rules written independently here,
// first for the decision function over random states, then through HTTP over real credentials and operations.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { decide } from '../src/identity/policy.ts';
import { workspaceAccess } from '../src/identity/access.ts';
import type { Principal, Scope } from '../src/identity/principal.ts';
import type { Store } from '../src/store/index.ts';
import { OPERATIONS } from '../generated/operations.ts';
import spec from '../generated/openapi.json' with { type: 'json' };
import { startTestServer, type TestServer } from './support/server.ts';
import { createApiKey, setPersonalKeysAllowed, setWorkspacePlan } from '../src/identity/admin.ts';
import { createOAuthClient, issueTokens } from '../src/identity/oauth.ts';

type Role = 'read' | 'write' | 'admin';
type Plan = 'free' | 'pro' | 'team' | 'max' | 'enterprise';
const RANK: Record<Role, number> = { read: 0, write: 1, admin: 2 };

interface World {
  kind: 'personal' | 'workspace' | 'oauth_access_token';
  scopes: Scope[];
  keyWorkspaceIsTarget: boolean;
  exists: boolean;
  membership: Role | null;
  allowPersonalKeys: boolean;
  plan: Plan;
  op: { scope: 'api:read' | 'api:write' | null; rejectsWorkspaceKeys: boolean; minRole: Role | null; plans: Plan[] | null };
  namesWorkspace: boolean;
}

/** The rules, as the mission and the issue state them. */
function model(w: World): 200 | 403 | 404 {
  const canWrite = w.kind !== 'oauth_access_token' || w.scopes.includes('api:write');
  const canRead = canWrite || w.scopes.includes('api:read');
  if (w.op.scope === 'api:write' && !canWrite) return 403;
  if (w.op.scope === 'api:read' && !canRead) return 403;
  if (w.op.rejectsWorkspaceKeys && w.kind === 'workspace') return 403;
  if (!w.namesWorkspace) return 200;
  let role: Role;
  if (w.kind === 'workspace') {
    if (!w.keyWorkspaceIsTarget || !w.exists) return 404;
    role = 'write';
  } else {
    if (!w.exists || !w.membership) return 404;
    if (w.kind === 'personal' && !w.allowPersonalKeys) return 403;
    role = w.membership;
  }
  if (w.op.minRole && RANK[role] < RANK[w.op.minRole]) return 403;
  if (w.op.plans && !w.op.plans.includes(w.plan)) return 403;
  return 200;
}

const plan = fc.constantFrom<Plan>('free', 'pro', 'team', 'max', 'enterprise');
const role = fc.constantFrom<Role>('read', 'write', 'admin');
const world: fc.Arbitrary<World> = fc.record({
  kind: fc.constantFrom('personal' as const, 'workspace' as const, 'oauth_access_token' as const),
  scopes: fc.subarray<Scope>(['api:read', 'api:write', 'offline_access']),
  keyWorkspaceIsTarget: fc.boolean(),
  exists: fc.boolean(),
  membership: fc.option(role, { nil: null }),
  allowPersonalKeys: fc.boolean(),
  plan,
  op: fc.record({
    scope: fc.constantFrom('api:read' as const, 'api:write' as const, null),
    rejectsWorkspaceKeys: fc.boolean(),
    minRole: fc.option(role, { nil: null }),
    plans: fc.option(fc.subarray<Plan>(['free', 'pro', 'team', 'max', 'enterprise'], { minLength: 1 }), { nil: null }),
  }),
  namesWorkspace: fc.boolean(),
});

describe('decision function', () => {
  it('matches the model for random credentials, operations and workspaces', async () => {
    await fc.assert(
      fc.asyncProperty(world, async (w) => {
        const target = 'ws-target';
        const principal: Principal = {
          userId: 'u1',
          kind: w.kind,
          credentialId: 'c1',
          workspaceId: w.kind === 'workspace' ? (w.keyWorkspaceIsTarget ? target : 'ws-other') : null,
          scopes: new Set(w.kind === 'oauth_access_token' ? w.scopes : ['api:read', 'api:write']),
          expiresAt: null,
          plan: 'free',
          subject: 'u1',
        };
        const fakeStore = {
          workspaces: { get: async (id: string) => (w.exists && id === target ? { id, allowPersonalKeys: w.allowPersonalKeys, plan: w.plan } : undefined) },
          members: { role: async (id: string) => (w.exists && id === target ? (w.membership ?? undefined) : undefined) },
        } as unknown as Store;
        const access = w.namesWorkspace ? await workspaceAccess(fakeStore, principal, target) : undefined;
        const denial = decide(principal, w.op, access);
        expect(denial?.status ?? 200).toBe(model(w));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('through HTTP', () => {
  let s: TestServer;
  const creds: { label: string; headers: Record<string, string>; kind: World['kind']; scopes: Scope[]; userRoles: Record<string, Role>; keyWorkspace: string | null; userId: string }[] = [];
  const workspaces: { id: string; allowPersonalKeys: boolean; plan: Plan; workflowId: string }[] = [];

  beforeAll(async () => {
    s = await startTestServer({ CREDENTIAL_RECHECK_MS: '0' });
    // Plans belong to billing accounts, so each workspace gets an owner (and account) of its own.
    const plans: Plan[] = ['free', 'enterprise', 'enterprise', 'pro'];
    const owners: string[] = [];
    for (let i = 0; i < 4; i++) {
      const owner = await s.newUser(`prop-owner-${i}@example.com`);
      owners.push(owner.userId);
      const id = await s.newWorkspace(`prop-${i}`, owner.userId);
      await setWorkspacePlan(s.services.store, id, plans[i]!);
      const allow = i !== 2;
      const created = await fetch(`${s.url}/api/v2/workflows`, {
        method: 'POST',
        headers: { 'X-API-Key': owner.key, 'Content-Type': 'application/json' },
        body: JSON.stringify({ workspaceId: id, name: `wf-${i}` }),
      });
      expect(created.status).toBe(201);
      const workflowId = ((await created.json()) as any).data.id as string;
      // Each workflow has a hosted chat, so reading it is a 200 wherever the policy allows.
      const chat = await fetch(`${s.url}/api/v2/workflows/${workflowId}/deployments/chat`, {
        method: 'PUT',
        headers: { 'X-API-Key': owner.key, 'Content-Type': 'application/json' },
        body: JSON.stringify({ identifier: `prop-chat-${i}`, title: `Chat ${i}` }),
      });
      expect(chat.status).toBe(200);
      if (!allow) await setPersonalKeysAllowed(s.services.store, id, false);
      workspaces.push({ id, allowPersonalKeys: allow, plan: plans[i]!, workflowId });
    }
    const app = await createOAuthClient(s.services.store, 'prop');
    const roles: (Role | null)[] = ['admin', 'read', 'write', null];
    for (let u = 0; u < 3; u++) {
      const userRoles: Record<string, Role> = {};
      workspaces.forEach((ws, i) => {
        const r = roles[(i + u) % roles.length];
        if (r) userRoles[ws.id] = r;
      });
      const user = await s.newUser(`prop-user-${u}@example.com`, userRoles);
      creds.push({ label: `personal-${u}`, headers: { 'X-API-Key': user.key }, kind: 'personal', scopes: ['api:read', 'api:write'], userRoles, keyWorkspace: null, userId: user.userId });
      for (const scopes of [['api:read'], ['api:write'], ['offline_access']] as Scope[][]) {
        // Tokens need api:read or api:write; an offline_access-only token is issued through the store directly.
        const t =
          scopes[0] === 'offline_access'
            ? await issueTokens(s.services.store, { clientId: app.id, userId: user.userId, scopes: ['api:read', 'offline_access'] })
            : await issueTokens(s.services.store, { clientId: app.id, userId: user.userId, scopes });
        creds.push({ label: `token-${scopes.join('+')}-${u}`, headers: { Authorization: `Bearer ${t.accessToken}` }, kind: 'oauth_access_token', scopes: t.scopes, userRoles, keyWorkspace: null, userId: user.userId });
      }
    }
    for (const [i, ws] of workspaces.slice(0, 3).entries()) {
      const creator = owners[i]!;
      const k = await createApiKey(s.services.store, { kind: 'workspace', userId: creator, workspaceId: ws.id });
      creds.push({ label: `wskey-${ws.id}`, headers: { 'X-API-Key': k.key }, kind: 'workspace', scopes: ['api:read', 'api:write'], userRoles: {}, keyWorkspace: ws.id, userId: creator });
    }
  });
  afterAll(() => s.stop());

  // Reads whose required parameters the fixture can fill (a workspace, a workflow), plus one write.
  const fillable = (o: (typeof OPERATIONS)[keyof typeof OPERATIONS]) => {
    const op = (spec as any).paths[o.path][o.method];
    const params = (op.parameters ?? []).map((p: any) => (p.$ref ? (spec as any).components.parameters[p.$ref.split('/').pop()] : p));
    return params.filter((p: any) => p.required).every((p: any) => ['workspaceId', 'workflowId'].includes(p.name));
  };
  // Bulk download needs a selection (fileIds or folderPaths) on top of its declared parameters.
  const ops = Object.values(OPERATIONS).filter(
    // Public operations (security: []) authorize by a signature or token, not a credential: outside this model.
    (o) => (o.method === 'get' && !o.public && fillable(o) && o.operationId !== 'bulkDownloadFiles') || o.operationId === 'createWorkflow',
  );

  it('every (credential, operation, workspace) triple gets the status the model predicts', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.nat(), fc.nat(), async (ci, oi, wi) => {
        const cred = creds[ci % creds.length]!;
        const op = ops[oi % ops.length]!;
        const ws = workspaces[wi % workspaces.length]!;
        // Audit logs name their workspace through the optional query filter; workflow operations through the
        // workflow they touch.
        const names = op.workspaceIdIn !== null || op.operationId === 'listAuditLogs' || op.path.includes('{workflowId}');
        let url = op.path.replace('{workspaceId}', ws.id).replace('{workflowId}', ws.workflowId);
        if (op.workspaceIdIn === 'query' || op.operationId === 'listAuditLogs') url += `?workspaceId=${ws.id}`;
        const init: RequestInit = { headers: cred.headers };
        if (op.operationId === 'createWorkflow') {
          init.method = 'POST';
          init.headers = { ...cred.headers, 'Content-Type': 'application/json' };
          init.body = JSON.stringify({ workspaceId: ws.id, name: `made by ${cred.label} ${Math.random()}` });
        }
        const res = await fetch(s.url + url, init);
        const status = res.status === 201 ? 200 : res.status;
        const expected = model({
          kind: cred.kind,
          scopes: cred.scopes,
          keyWorkspaceIsTarget: cred.keyWorkspace === ws.id,
          exists: true,
          membership: cred.userRoles[ws.id] ?? null,
          allowPersonalKeys: ws.allowPersonalKeys,
          plan: ws.plan,
          op: { scope: op.scope, rejectsWorkspaceKeys: op.rejectsWorkspaceKeys, minRole: op.minRole, plans: op.plans ? [...op.plans] : null },
          namesWorkspace: names,
        });
        expect(`${cred.label} ${op.operationId} ${ws.plan}/${ws.allowPersonalKeys}: ${status}`).toBe(`${cred.label} ${op.operationId} ${ws.plan}/${ws.allowPersonalKeys}: ${expected}`);
      }),
      { numRuns: 250 },
    );
  });
});
