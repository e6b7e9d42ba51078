/**
 * The clock the pacing loop and the limiters read: a monotonic time in milliseconds and one-shot timers.
 * The bridge runs on `systemClock`; a test hands a clock it drives itself (test/helpers/clock.ts) to the
 * part it checks, so time passes when the test says and never by sleeping.
 */
import { performance } from 'node:perf_hooks';

/** What `Clock.setTimeout` answers: a handle for `clearTimeout`. */
export interface ClockTimer {
  /** The timer does not keep the process alive (the system clock's timers); a no-op elsewhere. */
  unref(): unknown;
}

export interface Clock {
  /** Milliseconds, monotonic (performance.now() on the system clock). */
  now(): number;
  /** Runs `fn` once, `ms` from now. */
  setTimeout(fn: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer): void;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};
