/**
 * One timer for every session. Each wake-up reads the monotonic clock once, lets every member send what
 * its own schedule says is due (see src/audio/pacer.ts), and collects the earliest time any member will
 * next have something due; the timer is armed for that time. The wake-ups only bound how late a chunk
 * leaves; they never set the rate, so they cannot drift.
 *
 * Why not a fixed tick: with a 5 ms tick the send times of 20 ms chunks jitter by up to 5 ms, and the
 * inter-arrival p99 measured 24.7 ms, at the 25 ms bound. Aimed wake-ups land within ~1 ms.
 * Wake-ups are at least `minGapMs` apart so that thousands of sessions with spread-out schedules cost
 * at most 1000 / minGapMs wake-ups a second, not one per chunk.
 */
import { performance } from 'node:perf_hooks';

export interface Paced {
  /**
   * Sends whatever is due at `now` (ms, monotonic). Returns when it next has something due (Infinity when
   * nothing is queued). Must not throw.
   */
  service(now: number): number;
}

export class PacingLoop {
  readonly minGapMs: number;
  readonly #members = new Set<Paced>();
  #timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires (Infinity when none is armed). */
  #armedAt = Number.POSITIVE_INFINITY;
  #lastTick = Number.NEGATIVE_INFINITY;

  constructor(minGapMs: number) {
    this.minGapMs = minGapMs;
  }

  get size(): number {
    return this.#members.size;
  }

  add(member: Paced): void {
    this.#members.add(member);
  }

  delete(member: Paced): void {
    this.#members.delete(member);
  }

  /** A member will have something due at `at`: the loop wakes by then (or `minGapMs` after its last tick). */
  wakeBy(at: number): void {
    if (at >= this.#armedAt) return;
    this.#arm(at);
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedAt = Number.POSITIVE_INFINITY;
  }

  #arm(at: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    const when = Math.max(at, this.#lastTick + this.minGapMs);
    this.#armedAt = when;
    this.#timer = setTimeout(this.#tick, Math.max(0, Math.ceil(when - performance.now())));
    // The sockets keep the process alive; this timer must not.
    this.#timer.unref();
  }

  readonly #tick = (): void => {
    this.#timer = undefined;
    this.#armedAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    this.#lastTick = now;
    let next = Number.POSITIVE_INFINITY;
    for (const m of this.#members) {
      const at = m.service(now);
      if (at < next) next = at;
    }
    if (next !== Number.POSITIVE_INFINITY && next < this.#armedAt) this.#arm(next);
  };
}
