/**
 * Client-side pacing of sends: a token bucket, and full-jitter backoff for the retries of a
 * rate-limited or unavailable provider. Pure apart from `acquire`'s timer; the clock is injectable.
 */

export interface TokenBucketOptions {
  /** Tokens added per second: chat.md's sender allows 80 requests per second. */
  readonly perSecond?: number;
  /** Tokens held at most, i.e. the largest burst admitted at once (80: ours). */
  readonly burst?: number;
  /** Milliseconds, monotonic. */
  readonly now?: () => number;
}

/**
 * Each `take` reserves the next token, even one not yet there: the answer is how long the caller waits
 * before using it, so concurrent callers get distinct slots 1/perSecond apart once the burst is spent.
 * A reservation is never given back (an abandoned one is a wasted slot, which only slows the rate).
 */
export class TokenBucket {
  readonly perSecond: number;
  readonly burst: number;
  readonly #now: () => number;
  /** Tokens at `#at`; negative when that many are reserved ahead of the refill. */
  #tokens: number;
  #at: number;

  constructor(options: TokenBucketOptions = {}) {
    this.perSecond = options.perSecond ?? 80;
    this.burst = options.burst ?? this.perSecond;
    if (!(this.perSecond > 0) || !(this.burst >= 1)) {
      throw new RangeError(
        `a token bucket needs perSecond > 0 and burst >= 1, got ${this.perSecond}, ${this.burst}`,
      );
    }
    this.#now = options.now ?? (() => performance.now());
    this.#tokens = this.burst;
    this.#at = this.#now();
  }

  /** Reserves a token: milliseconds to wait before the send may go (0 when one is there now). */
  take(): number {
    return this.tryTake(Number.POSITIVE_INFINITY) as number;
  }

  /** As `take`, but reserves nothing and answers undefined when the wait would exceed `maxWaitMs`. */
  tryTake(maxWaitMs: number): number | undefined {
    this.#refill();
    const after = this.#tokens - 1;
    const wait = after >= 0 ? 0 : (-after * 1000) / this.perSecond;
    if (wait > maxWaitMs) return undefined;
    this.#tokens = after;
    return wait;
  }

  /** Waits for a token; rejects with the signal's reason when it aborts first. */
  async acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const wait = this.take();
    if (wait > 0) await delay(wait, signal);
  }

  #refill(): void {
    const now = this.#now();
    const elapsed = now - this.#at;
    if (elapsed > 0) {
      this.#tokens = Math.min(this.burst, this.#tokens + (elapsed * this.perSecond) / 1000);
      this.#at = now;
    }
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
