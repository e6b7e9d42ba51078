/**
 * When this bridge was last held up: its event loop ran late (a stall, a long garbage collection, a core
 * shared with busier work) or a DSP worker answered late. A hold-up delays everything on its way through
 * the bridge, the bot's next audio among it (and, where the bot shares the machine, the bot itself).
 * Timing that reads a silence as the bot pausing (the outbound idle flush, src/media/outbound.ts) asks
 * whether the bridge was held up since, so that its own stall is not taken for the bot's pause.
 *
 * The event loop is watched by an unref'd timer every WATCH_MS, only while someone holds a watch (the
 * queues with an idle flush: nothing else pays for it); the worker pool notes a late answer itself.
 */
import { performance } from 'node:perf_hooks';

/** A wake-up or an answer this much later than due (ms) counts as the bridge held up. */
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

  get lastAt(): number {
    return this.#lastAt;
  }

  /** Something due `lateMs` before `now` ran only at `now`. */
  late(now: number, lateMs: number): void {
    if (lateMs >= HELD_UP_MS && now > this.#lastAt) this.#lastAt = now;
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
  };
}
