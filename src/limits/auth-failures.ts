/**
 * The budget of failed authentications per client address (REST_AUTH_FAIL_LIMIT per minute). Every 401
 * the REST plane answers spends one unit of its address's budget; once it is spent, that address's
 * requests are answered 429 before any token is verified, until its minute ends. A flood of bad tokens
 * thus costs at most the budget's worth of verifications (a JWKS lookup, an RSA or HMAC check) and log
 * lines per minute, whatever the general REST_RATE_LIMIT allows.
 *
 * A fixed window that starts at an address's first failure, in memory, per instance (like the general
 * limit): a cluster of N instances lets an address fail up to N budgets a minute.
 */

import { type Clock, systemClock } from '../clock.js';

/** REST_AUTH_FAIL_LIMIT counts failures per this window. */
export const AUTH_FAIL_WINDOW_MS = 60_000;

export interface AuthFailureOptions {
  /** Failed authentications per address per window; the next request in the window is refused. */
  readonly max: number;
  readonly windowMs?: number;
  /** Addresses tracked at once; past it the one whose window started first is forgotten. */
  readonly capacity?: number;
  /** Where the windows are read from: the system clock unless a test drives its own. */
  readonly clock?: Pick<Clock, 'now'> | undefined;
}

interface Window {
  readonly start: number;
  failures: number;
}

export interface AuthFailureLimiter {
  readonly max: number;
  /** Seconds until `addr` may try again when its budget is spent, else undefined. */
  refusal(addr: string): number | undefined;
  /**
   * Spends one unit of `addr`'s budget (a request from it failed authentication); answers the failures
   * counted in its window, this one included (above `max`: past the budget).
   */
  fail(addr: string): number;
  /** Addresses tracked (metrics and tests). */
  readonly size: number;
}

export function createAuthFailureLimiter(o: AuthFailureOptions): AuthFailureLimiter {
  const windowMs = o.windowMs ?? AUTH_FAIL_WINDOW_MS;
  // As the general limit's store (rest.ts): 10,000 addresses hold 1.3 MB of heap (measured, ~135 bytes
  // each); past it, addresses cycle out oldest first.
  const capacity = o.capacity ?? 10_000;
  const clock = o.clock ?? systemClock;
  const now = () => clock.now();
  // Insertion order is window-start order: a new window re-inserts its address at the end.
  const windows = new Map<string, Window>();

  const current = (addr: string, t: number): Window | undefined => {
    const w = windows.get(addr);
    if (w === undefined) return undefined;
    if (t - w.start < windowMs) return w;
    windows.delete(addr);
    return undefined;
  };

  return {
    max: o.max,
    refusal(addr) {
      const t = now();
      const w = current(addr, t);
      if (w === undefined || w.failures < o.max) return undefined;
      return Math.max(1, Math.ceil((w.start + windowMs - t) / 1000));
    },
    fail(addr) {
      const t = now();
      const w = current(addr, t);
      if (w !== undefined) return ++w.failures;
      windows.set(addr, { start: t, failures: 1 });
      if (windows.size > capacity) {
        const oldest = windows.keys().next().value;
        if (oldest !== undefined) windows.delete(oldest);
      }
      return 1;
    },
    get size() {
      return windows.size;
    },
  };
}
