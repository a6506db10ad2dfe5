// What each billing plan allows. Numbers are defaults; configuration (see src/config.ts) may override them.
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
