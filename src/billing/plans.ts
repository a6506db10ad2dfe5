// What each billing plan allows. Numbers the mission leaves open ("storage quota sizes: not shown") are this
// server's defaults; STORAGE_QUOTA_BYTES and MAX_FILE_SIZE override them for every plan.
import type { Plan } from '../store/billing-accounts.ts';
import type { FileLimits } from '../config.ts';

const GiB = 1024 ** 3;

export interface PlanLimits {
  /** Bytes a workspace may store, counting every version and archived files until purged. */
  storageBytes: number;
  /** Largest single file. */
  maxFileBytes: number;
}

export const PLAN_LIMITS: Record<Plan, PlanLimits> = {
  free: { storageBytes: 5 * GiB, maxFileBytes: 5 * GiB },
  pro: { storageBytes: 50 * GiB, maxFileBytes: 10 * GiB },
  team: { storageBytes: 500 * GiB, maxFileBytes: 50 * GiB },
  max: { storageBytes: 1024 * GiB, maxFileBytes: 50 * GiB },
  enterprise: { storageBytes: 10 * 1024 * GiB, maxFileBytes: 100 * GiB },
};

export function planLimits(plan: Plan, overrides: Pick<FileLimits, 'storageQuotaBytes' | 'maxFileBytes'>): PlanLimits {
  const base = PLAN_LIMITS[plan] ?? PLAN_LIMITS.free;
  return {
    storageBytes: overrides.storageQuotaBytes ?? base.storageBytes,
    maxFileBytes: overrides.maxFileBytes ?? base.maxFileBytes,
  };
}
