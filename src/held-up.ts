/**
 * When this bridge was last held up: its event loop ran late (a stall, a long garbage collection, a core
 * shared with busier work) or a DSP worker took long to answer. A hold-up delays everything on its way
 * through the bridge, the bot's next audio among it (and, where the bot shares the machine, the bot
 * itself). Timing that reads a silence as the bot pausing (the idle flush of the playout core,
 * src/audio/playout.ts, through the outbound writer) asks whether the bridge was held up since, so that
 * its own stall is not taken for the bot's pause.
 *
 * It reads performance.now(), the system clock's timeline (the calls' clock in production): it measures
 * the real event loop and workers, which a clock a test drives by hand cannot hold up, so it is not on
 * the clock seam (src/clock.ts).
 *
 * While someone holds a watch (the queues with an idle flush: nothing else pays for it), an unref'd timer
 * every WATCH_MS sees how late it runs itself and asks each probe how long its work has been waiting (the
 * worker pool: its oldest unanswered batch), so a worker still stuck is seen before it answers. The pool
 * also notes each answer that took long.
 */
import { performance } from 'node:perf_hooks';

/** A wake-up this much later than due, or work unanswered this long (ms), counts as the bridge held up. */
export const HELD_UP_MS = 20;
/** The watch's period (ms). */
const WATCH_MS = 10;

export class HeldUp {
  /** When the last hold-up was seen (ms on performance.now()); -Infinity: none yet. */
  #lastAt = Number.NEGATIVE_INFINITY;
  #watchers = 0;
  #timer: NodeJS.Timeout | undefined;
  /** When the watch's timer last ran. */
  #tickAt = 0;
  /** How long (ms, at `now`) each prober's oldest work has been waiting; 0 when none waits. */
  readonly #probes = new Set<(now: number) => number>();

  get lastAt(): number {
    return this.#lastAt;
  }

  /** Watches held now. */
  get watching(): number {
    return this.#watchers;
  }

  /** Something due `lateMs` before `now` ran only at `now` (or has been waiting that long by `now`). */
  late(now: number, lateMs: number): void {
    if (lateMs >= HELD_UP_MS && now > this.#lastAt) this.#lastAt = now;
  }

  /** Asked at each watch tick how long its oldest work has been waiting; returns the removal. */
  probe(waitingMs: (now: number) => number): () => void {
    this.#probes.add(waitingMs);
    return () => {
      this.#probes.delete(waitingMs);
    };
  }

  /** Watches the event loop until the returned function is called (once per watch; more calls are no-ops). */
  watch(): () => void {
    if (this.#watchers++ === 0) {
      this.#tickAt = performance.now();
      this.#timer = setInterval(this.#tick, WATCH_MS);
      // The sockets keep the process alive; this timer must not.
      this.#timer.unref();
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#watchers === 0) {
        clearInterval(this.#timer);
        this.#timer = undefined;
      }
    };
  }

  readonly #tick = (): void => {
    const now = performance.now();
    this.late(now, now - this.#tickAt - WATCH_MS);
    this.#tickAt = now;
    for (const waitingMs of this.#probes) this.late(now, waitingMs(now));
  };
}
