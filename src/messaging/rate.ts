/**
 * Client-side pacing of sends: slots held from a send's admission until `windowMs` after its answer,
 * at most `limit` at once, and full-jitter backoff for the retries of a rate-limited or unavailable
 * provider. The clock is injectable; releases and waits run on timers.
 */
import { setMaxListeners } from 'node:events';

export interface SendSlotsOptions {
  /** Slots held at once: chat.md's sender allows 80 requests per second. */
  readonly limit?: number;
  /** How long a slot stays held after its answer, in milliseconds (1,000). */
  readonly windowMs?: number;
  /** Milliseconds, monotonic. */
  readonly now?: () => number;
}

/** One send's hold on the pace: taken at admission, given back once its answer (or failure) is in. */
export interface Slot {
  /** When the slot was granted, on the slots' clock: the send may go at once. */
  readonly admittedAt: number;
  /**
   * The answer (or failure) has arrived: the slot is free `holdMs` (0) plus `windowMs` from now. Later
   * calls do nothing.
   */
  release(holdMs?: number): void;
}

interface Held {
  /** When the slot is free again: undefined while its send is in flight. */
  freeAt: number | undefined;
}

interface Waiter {
  /** Hands the waiter its slot, or undefined when it gives up at its deadline. */
  readonly settle: (slot: Slot | undefined) => void;
  /** Ends the wait with an error: the slots are closed. */
  readonly fail: (err: unknown) => void;
}

/**
 * A send holds a slot from its admission until `windowMs` after its answer (or failure) arrives, and at
 * most `limit` slots are held at once; waiters are served first come, first served.
 *
 * No rolling `windowMs` at the provider holds more than `limit` arrivals, whatever the network does:
 * a request arriving in [t, t + windowMs) was admitted before it arrived and is answered after, so its
 * slot is held until past t + windowMs, and just before then at most `limit` slots are held.
 */
export class SendSlots {
  readonly limit: number;
  readonly windowMs: number;
  readonly #now: () => number;
  readonly #held = new Set<Held>();
  readonly #waiters: Waiter[] = [];
  /** Aborted by `close()`: ends the release timers. */
  readonly #closing = new AbortController();

  constructor(options: SendSlotsOptions = {}) {
    this.limit = options.limit ?? 80;
    this.windowMs = options.windowMs ?? 1_000;
    if (!Number.isInteger(this.limit) || this.limit < 1 || !(this.windowMs > 0)) {
      throw new RangeError(
        `send slots need a whole limit >= 1 and windowMs > 0, got ${this.limit}, ${this.windowMs}`,
      );
    }
    this.#now = options.now ?? (() => performance.now());
    // Every release timer listens for the close: up to `limit` of them at once, by design.
    setMaxListeners(0, this.#closing.signal);
  }

  /** Slots held now: sends in flight, and answered ones within `windowMs` of their answer. */
  get held(): number {
    return this.#held.size;
  }

  /** True once `close()` has been called. */
  get closed(): boolean {
    return this.#closing.signal.aborted;
  }

  /**
   * Ends the slots: clears the release timers, rejects every waiter and every later acquire with
   * `reason` (by default an error saying the slots are closed). Slots released afterwards free at
   * once. Calling it again does nothing.
   */
  close(reason: unknown = new Error('send slots closed: no slot will be granted')): void {
    if (this.closed) return;
    this.#closing.abort(reason);
    this.#held.clear();
    for (const w of this.#waiters.slice()) w.fail(reason);
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /**
   * A slot, at once when one is free and nobody waits, else after the callers ahead of this one.
   * Resolves undefined without waiting when the slot could not come within `maxWaitMs` even if every
   * send in flight were answered now (the callers ahead taking the slots first, each held `windowMs`
   * at least), and undefined at `maxWaitMs` when it has not come by then. Rejects with the signal's
   * reason when it aborts first, and with the reason given to `close()` once the slots are closed.
   */
  acquire(maxWaitMs: number, signal?: AbortSignal): Promise<Slot | undefined> {
    if (this.closed) return Promise.reject(this.#closing.signal.reason);
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (!(maxWaitMs >= 0)) return Promise.resolve(undefined);
    if (this.#waiters.length === 0 && this.#held.size < this.limit) return Promise.resolve(this.#grant());
    if (this.#earliest(this.#waiters.length) - this.#now() > maxWaitMs) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      const leave = () => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        settle: (slot) => {
          leave();
          resolve(slot);
        },
        fail: (err) => {
          leave();
          reject(err);
        },
      };
      const onAbort = () => {
        leave();
        reject(signal?.reason);
      };
      // Past 2^31 - 1 ms setTimeout fires at once: such a bound is no bound.
      const timer =
        maxWaitMs < 2 ** 31 - 1 ? setTimeout(() => waiter.settle(undefined), maxWaitMs) : undefined;
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /**
   * The earliest time the caller with `ahead` waiters before it could get a slot: the held slots free
   * at the earliest `windowMs` from now (in flight) or at their known time (answered), and each slot a
   * waiter takes is held `windowMs` at least.
   */
  #earliest(ahead: number): number {
    const now = this.#now();
    const frees = Array.from({ length: this.limit - this.#held.size }, () => now);
    for (const h of this.#held) frees.push(h.freeAt ?? now + this.windowMs);
    frees.sort((a, b) => a - b);
    return frees[ahead % this.limit]! + Math.floor(ahead / this.limit) * this.windowMs;
  }

  #grant(): Slot {
    const held: Held = { freeAt: undefined };
    this.#held.add(held);
    return {
      admittedAt: this.#now(),
      release: (holdMs = 0) => {
        if (held.freeAt !== undefined) return;
        held.freeAt = this.#now() + Math.max(0, holdMs) + this.windowMs;
        if (this.closed) {
          this.#held.delete(held);
          return;
        }
        // Checked against the clock on wake: a timer firing a millisecond early must not free it early.
        // Closing ends the wait (the rejection is expected, and nothing waits for a slot any more).
        delayUntil(held.freeAt, this.#now, this.#closing.signal).then(
          () => this.#free(held),
          () => {},
        );
      },
    };
  }

  #free(held: Held): void {
    this.#held.delete(held);
    while (this.#held.size < this.limit && this.#waiters.length > 0) this.#waiters[0]!.settle(this.#grant());
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
