/**
 * Client-side pacing of sends: a sliding log that admits at most `limit` sends in any window of
 * `windowMs`, and full-jitter backoff for the retries of a rate-limited or unavailable provider. Pure
 * apart from `acquire`'s timer; the clock is injectable.
 */

export interface SlidingWindowLimiterOptions {
  /** Sends admitted in any one window: chat.md's sender allows 80 requests per second. */
  readonly limit?: number;
  /** The window, in milliseconds (1,000). */
  readonly windowMs?: number;
  /** Milliseconds, monotonic. */
  readonly now?: () => number;
}

/**
 * A send is admitted when the `limit`-th send back is at least `windowMs` old, so no window of
 * `windowMs` (wherever it starts) ever holds more than `limit`: the provider counts a rolling second,
 * and a token bucket of burst 80 refilled at 80/s would let up to 159 through in one.
 *
 * Each `take` reserves the next admission time, even one in the future: the answer is how long the
 * caller waits before sending, so concurrent callers get distinct times in call order. A reservation is
 * never given back (an abandoned one is a wasted slot, which only slows the rate).
 */
export class SlidingWindowLimiter {
  readonly limit: number;
  readonly windowMs: number;
  readonly #now: () => number;
  /** The last `limit` admission times (reserved ones included), oldest first; never decreasing. */
  readonly #log: number[] = [];

  constructor(options: SlidingWindowLimiterOptions = {}) {
    this.limit = options.limit ?? 80;
    this.windowMs = options.windowMs ?? 1_000;
    if (!Number.isInteger(this.limit) || this.limit < 1 || !(this.windowMs > 0)) {
      throw new RangeError(
        `a sliding window limiter needs a whole limit >= 1 and windowMs > 0, got ${this.limit}, ${this.windowMs}`,
      );
    }
    this.#now = options.now ?? (() => performance.now());
  }

  /** Reserves an admission: milliseconds to wait before the send may go (0 when it may go now). */
  take(): number {
    return this.tryTake(Number.POSITIVE_INFINITY) as number;
  }

  /** As `take`, but reserves nothing and answers undefined when the wait would exceed `maxWaitMs`. */
  tryTake(maxWaitMs: number): number | undefined {
    const now = this.#now();
    const at = this.#reserve(now, maxWaitMs);
    return at === undefined ? undefined : at - now;
  }

  /**
   * As `tryTake`, but answers the admission time itself (on the limiter's clock): the send goes once
   * the clock reaches it. No window of `windowMs` holds more than `limit` of these times.
   */
  tryAdmit(maxWaitMs: number): number | undefined {
    return this.#reserve(this.#now(), maxWaitMs);
  }

  #reserve(now: number, maxWaitMs: number): number | undefined {
    const log = this.#log;
    // The log holds at most `limit` entries, so its first is the limit-th send back once it is full.
    const at = log.length < this.limit ? now : Math.max(now, log[0]! + this.windowMs);
    if (at - now > maxWaitMs) return undefined;
    log.push(at);
    if (log.length > this.limit) log.shift();
    return at;
  }

  /** Waits for an admission; rejects with the signal's reason when it aborts first. */
  async acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const wait = this.take();
    if (wait > 0) await delayUntil(this.#now() + wait, this.#now, signal);
  }
}

/**
 * Full-jitter backoff: a uniform wait in [0, min(capMs, baseMs * 2^attempt)), `attempt` 0 for the first
 * retry. Spreads retries of many callers instead of having them return together.
 */
export function backoffMs(
  attempt: number,
  baseMs: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt));
  return Math.floor(random() * ceiling);
}

/**
 * Resolves once `now()` has reached `at`. Timers may fire a millisecond early against
 * `performance.now()`; a send let out early could make 81 in the provider's second, so the wait is
 * checked against the clock and topped up.
 */
export async function delayUntil(
  at: number,
  now: () => number = () => performance.now(),
  signal?: AbortSignal,
): Promise<void> {
  for (let left = at - now(); left > 0; left = at - now()) await delay(Math.max(1, left), signal);
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
