/**
 * The store behind REST_RATE_LIMIT: a fixed window per address, started by its first request, read
 * from a `Clock`. It counts as `@fastify/rate-limit`'s own in-memory store does (without the options we
 * do not use: continueExceeding, exponential backoff); ours reads the injected clock instead of
 * `Date.now()`, so a test moves a window on by advancing its clock rather than by waiting a minute.
 */
import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Clock } from '../clock.js';

interface Window {
  start: number;
  count: number;
}

/**
 * A store class for the plugin's `store` option. At most `capacity` addresses are tracked in each store
 * (the general one and each route's own); past it the least recently seen is forgotten.
 */
export function windowStore(clock: Pick<Clock, 'now'>, capacity: number): FastifyRateLimitStoreCtor {
  class WindowStore implements FastifyRateLimitStore {
    // Insertion order is recency order: a hit re-inserts its address at the end.
    readonly #windows = new Map<string, Window>();

    incr(
      key: string,
      callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
      timeWindow: number,
    ): void {
      const now = clock.now();
      let w = this.#windows.get(key);
      if (w !== undefined) this.#windows.delete(key);
      if (w === undefined || now - w.start >= timeWindow) w = { start: now, count: 0 };
      w.count++;
      this.#windows.set(key, w);
      if (this.#windows.size > capacity) {
        const oldest = this.#windows.keys().next().value;
        if (oldest !== undefined) this.#windows.delete(oldest);
      }
      callback(null, { current: w.count, ttl: Math.max(0, w.start + timeWindow - now) });
    }

    child(): FastifyRateLimitStore {
      return new WindowStore();
    }
  }
  return WindowStore;
}
