/**
 * How tests let time pass. Tests never sleep a guessed number of milliseconds (a lint rule in
 * test/lint/no-raw-sleep.test.ts keeps raw `setTimeout` sleeps out of test/); they wait for what they
 * need:
 * - `waitFor`: polls a condition until it holds, failing with a message that names it at the deadline;
 * - `quietFor`: lets time pass to show that something does NOT happen within it (no audio after a clear);
 * - `reach`: resolves once the monotonic clock reads a given time (paced senders scheduling each send).
 * This file is the one place in test/ that arms a timer to wait.
 */
import { performance } from 'node:perf_hooks';

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `cond` (which may be async) every `stepMs` until it holds; resolves to the milliseconds it
 * took. Past `timeoutMs` it rejects with "timed out after N ms waiting for <what>".
 */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  stepMs = 5,
): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await cond()) return performance.now() - t0;
    if (performance.now() - t0 > timeoutMs)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await pause(stepMs);
  }
}

/**
 * Lets `ms` pass, for a test that shows something does not happen within it (the name says so, where a
 * bare sleep would not). `_why` says what must stay quiet, for the reader.
 */
export function quietFor(ms: number, _why: string): Promise<void> {
  return pause(ms);
}

/** Resolves once `performance.now()` reads at least `t` (at once when it already does). */
export function reach(t: number): Promise<void> {
  const wait = t - performance.now();
  return wait > 0 ? pause(wait) : Promise.resolve();
}
