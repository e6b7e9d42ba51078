/**
 * A clock a test drives by hand (src/clock.ts's `Clock`): time stands still until `advance`, which
 * fires the timers that come due on the way, in the order of their due times (ties in the order they
 * were set), with `now()` reading each one's due time as it fires.
 */
import type { Clock, ClockTimer } from '../../src/clock.js';

interface Pending extends ClockTimer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #pending: Pending[] = [];

  constructor(start = 1_000) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): ClockTimer {
    const t: Pending = {
      at: this.#now + Math.max(0, ms),
      seq: this.#seq++,
      fn,
      cancelled: false,
      unref: () => t,
    };
    this.#pending.push(t);
    return t;
  }

  clearTimeout(timer: ClockTimer): void {
    (timer as Pending).cancelled = true;
  }

  /** Timers set and not yet fired or cleared. */
  get pending(): number {
    return this.#pending.filter((t) => !t.cancelled).length;
  }

  /** Moves time on by `ms`, firing every timer due by then (those the fired ones set included). */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      const live = this.#pending.filter((t) => !t.cancelled && t.at <= end);
      if (live.length === 0) break;
      const next = live.reduce((a, b) => (b.at < a.at || (b.at === a.at && b.seq < a.seq) ? b : a));
      this.#pending.splice(this.#pending.indexOf(next), 1);
      this.#now = Math.max(this.#now, next.at);
      next.fn();
    }
    this.#now = end;
    for (let i = this.#pending.length - 1; i >= 0; i--)
      if (this.#pending[i]!.cancelled) this.#pending.splice(i, 1);
  }
}
