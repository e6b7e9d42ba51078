/**
 * One timer for every session, and the one clock of a call's timers. Members (outbound writers, built-in
 * bots) say when they next have something due; the loop keeps those times in a min-heap, arms its one
 * timer for the earliest, and on each wake-up reads the clock once and services only the members that
 * are due. A member's `service` does what its own schedule says is due (the writer: the chunks its
 * playout core has due, src/audio/playout.ts; the marks it reports by its own reckoning; a hang-up's
 * wait) and returns when it next has something due, which goes back into the heap. The wake-ups only
 * bound how late a chunk leaves; they never set the rate, so they cannot drift. Members read the time
 * from `now()`, so a test that hands the loop a clock it drives (test/helpers/clock.ts) drives them all.
 *
 * Why not a fixed tick: with a 5 ms tick the send times of 20 ms chunks jitter by up to 5 ms, and the
 * inter-arrival p99 measured 24.7 ms, at the 25 ms bound. Aimed wake-ups land within ~1 ms.
 * Wake-ups are at least `minGapMs` apart so that thousands of sessions with spread-out schedules cost
 * at most 1000 / minGapMs wake-ups a second, not one per chunk; and a wake-up touches only the members
 * due by then, not every session (with 1,000 calls that is ~2,000 members, 500 times a second).
 */
import { type Clock, type ClockTimer, systemClock } from '../clock.js';

export interface Paced {
  /**
   * Sends whatever is due at `now` (ms, monotonic). Returns when it next has something due (Infinity when
   * nothing is queued). Must not throw. Being serviced early, or twice, is harmless.
   */
  service(now: number): number;
}

export class PacingLoop {
  readonly minGapMs: number;
  readonly #members = new Set<Paced>();
  /** The earliest wake-up each member has in the heap; heap entries that do not match it are stale. */
  readonly #due = new Map<Paced, number>();
  /** A binary min-heap on `#at`, with the member of each entry at the same index. */
  readonly #at: number[] = [];
  readonly #who: Paced[] = [];
  readonly #clock: Clock;
  #timer: ClockTimer | undefined;
  /** When the armed timer fires (Infinity when none is armed). */
  #armedAt = Number.POSITIVE_INFINITY;
  #lastTick = Number.NEGATIVE_INFINITY;

  /** `clock`: the system's by default; tests pass one they advance by hand. */
  constructor(minGapMs: number, clock: Clock = systemClock) {
    this.minGapMs = minGapMs;
    this.#clock = clock;
  }

  /** The loop's clock, ms (monotonic): the time its members schedule by. */
  now(): number {
    return this.#clock.now();
  }

  get size(): number {
    return this.#members.size;
  }

  add(member: Paced): void {
    this.#members.add(member);
  }

  /** The member is serviced no more; its pending wake-ups are dropped when they come up. */
  delete(member: Paced): void {
    this.#members.delete(member);
    this.#due.delete(member);
  }

  /** `member` will have something due at `at`: it is serviced by then (or `minGapMs` after the last tick). */
  wakeBy(member: Paced, at: number): void {
    // NaN would sit at the heap's top, never due and never passed: the loop would stop for everyone.
    if (Number.isNaN(at) || !this.#members.has(member)) return;
    const cur = this.#due.get(member);
    if (cur !== undefined && cur <= at) return;
    this.#due.set(member, at);
    this.#push(at, member);
    if (at < this.#armedAt) this.#arm(at);
  }

  stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedAt = Number.POSITIVE_INFINITY;
  }

  #arm(at: number): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    const when = Math.max(at, this.#lastTick + this.minGapMs);
    this.#armedAt = when;
    this.#timer = this.#clock.setTimeout(this.#tick, Math.max(0, Math.ceil(when - this.#clock.now())));
    // The sockets keep the process alive; this timer must not.
    this.#timer.unref();
  }

  readonly #tick = (): void => {
    this.#timer = undefined;
    this.#armedAt = Number.POSITIVE_INFINITY;
    const now = this.#clock.now();
    this.#lastTick = now;
    const at = this.#at;
    while (at.length > 0 && at[0]! <= now) {
      const t = at[0]!;
      const m = this.#pop();
      if (this.#due.get(m) !== t) continue;
      this.#due.delete(m);
      const next = m.service(now);
      if (next !== Number.POSITIVE_INFINITY) this.wakeBy(m, Math.max(next, now + this.minGapMs));
    }
    // What the members' services armed may be later than what is left in the heap.
    if (at.length > 0 && at[0]! < this.#armedAt) this.#arm(at[0]!);
  };

  #push(t: number, m: Paced): void {
    const at = this.#at;
    const who = this.#who;
    let i = at.length;
    at.push(t);
    who.push(m);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (at[p]! <= t) break;
      at[i] = at[p]!;
      who[i] = who[p]!;
      i = p;
    }
    at[i] = t;
    who[i] = m;
  }

  #pop(): Paced {
    const at = this.#at;
    const who = this.#who;
    const top = who[0]!;
    const t = at.pop()!;
    const m = who.pop()!;
    const n = at.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && at[r]! < at[l]! ? r : l;
        if (at[c]! >= t) break;
        at[i] = at[c]!;
        who[i] = who[c]!;
        i = c;
      }
      at[i] = t;
      who[i] = m;
    }
    return top;
  }
}
