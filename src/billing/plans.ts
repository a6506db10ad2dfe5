// What each billing plan allows. Numbers the mission leaves open (rate limits, storage quota sizes: "not
// shown") are this server's defaults; configuration (see src/config.ts) may override them.
import type { Plan } from '../store/billing-accounts.ts';

export type RateBucket = 'api' | 'sync' | 'async';

/** Requests per minute in each token bucket; the bucket holds one minute's worth. */
export type RateLimits = Record<RateBucket, number>;

export const DEFAULT_RATE_LIMITS: Record<Plan, RateLimits> = {
  free: { api: 600, sync: 10, async: 50 },
  pro: { api: 1200, sync: 25, async: 200 },
  team: { api: 2400, sync: 75, async: 500 },
  max: { api: 3600, sync: 100, async: 800 },
  enterprise: { api: 6000, sync: 150, async: 1000 },
};

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

/** Configured overrides of every plan's quotas (config.files: STORAGE_QUOTA_BYTES, MAX_FILE_SIZE); null keeps the plan's. */
export interface PlanLimitOverrides {
  storageQuotaBytes: number | null;
  maxFileBytes: number | null;
}

export function planLimits(plan: Plan, overrides: PlanLimitOverrides): PlanLimits {
  const base = PLAN_LIMITS[plan] ?? PLAN_LIMITS.free;
  return {
    storageBytes: overrides.storageQuotaBytes ?? base.storageBytes,
    maxFileBytes: overrides.maxFileBytes ?? base.maxFileBytes,
  };
}

/** What each plan allows a workflow run. */
export interface ExecutionPolicy {
  /** Longest an asynchronous run may take (seconds); `executionTimeoutSeconds` is capped to it and it is the default. */
  maxAsyncSeconds: number;
  /** Recorded cost (USD) per calendar month after which new runs fail with USAGE_LIMIT_EXCEEDED. */
  usageLimitUsd: number;
}

export const DEFAULT_EXECUTION_POLICIES: Record<Plan, ExecutionPolicy> = {
  free: { maxAsyncSeconds: 30 * 60, usageLimitUsd: 10 },
  pro: { maxAsyncSeconds: 3 * 3600, usageLimitUsd: 100 },
  team: { maxAsyncSeconds: 12 * 3600, usageLimitUsd: 500 },
  max: { maxAsyncSeconds: 24 * 3600, usageLimitUsd: 1000 },
  enterprise: { maxAsyncSeconds: 7 * 24 * 3600, usageLimitUsd: 100_000 },
};

/** Tables per workspace and rows per table on each plan (TABLES_LIMIT_<PLAN> / TABLE_ROWS_LIMIT_<PLAN> override). */
export const DEFAULT_TABLE_LIMITS: Record<Plan, { tables: number; rowsPerTable: number }> = {
  free: { tables: 5, rowsPerTable: 50_000 },
  pro: { tables: 100, rowsPerTable: 100_000 },
  team: { tables: 1000, rowsPerTable: 500_000 },
  max: { tables: 1000, rowsPerTable: 500_000 },
  enterprise: { tables: 10_000, rowsPerTable: 1_000_000 },
};
