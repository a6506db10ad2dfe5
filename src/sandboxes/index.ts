// Sandboxes as blocks use them: find the sandbox a function block names and hand out the pool of its build.
import type { Store } from '../store/index.ts';
import type { SandboxBuilder } from './builder.ts';

export { SandboxBuilder, SandboxSpecError, checkSpec, specHash, type SandboxSpec } from './builder.ts';

/** The pool for a function block naming `ref` (a sandbox id or name in the workspace); clear errors otherwise. */
export async function sandboxPoolFor(store: Store, builder: SandboxBuilder, workspaceId: string, ref: string) {
  const sandbox = (await store.sandboxes.get(workspaceId, ref)) ?? (await store.sandboxes.getByName(workspaceId, ref));
  if (!sandbox) throw new Error(`The sandbox "${ref}" does not exist (it may have been deleted); choose another sandbox for this function`);
  if (sandbox.language !== 'javascript') throw new Error(`The sandbox "${sandbox.name}" is a ${sandbox.language} sandbox; function blocks here run JavaScript`);
  if (sandbox.buildStatus !== 'ready' || !builder.isBuilt(sandbox.specHash)) {
    const why = sandbox.buildStatus === 'failed' ? `its build failed (${sandbox.errorCode}: ${sandbox.errorMessage})` : `its build is ${sandbox.buildStatus ?? 'not started'}`;
    throw new Error(`The sandbox "${sandbox.name}" is not ready: ${why}`);
  }
  return builder.poolFor(sandbox.specHash);
}
