/**
 * One timer for every session: each tick reads the monotonic clock once and lets every member send
 * what its own schedule says is due (see src/audio/pacer.ts). The tick only bounds how late a chunk
 * can leave; it never sets the rate, so it does not drift. One timer for all sessions costs one wake-up
 * per tick however many calls are live, where a timer per session costs one per session.
 */
import { performance } from 'node:perf_hooks';

export interface Paced {
  /** Sends whatever is due at `now` (ms, monotonic). Must not throw. */
  service(now: number): void;
}

export class PacingLoop {
  readonly tickMs: number;
  readonly #members = new Set<Paced>();
  #timer: NodeJS.Timeout | undefined;

  constructor(tickMs: number) {
    this.tickMs = tickMs;
  }

  get size(): number {
    return this.#members.size;
  }

  add(member: Paced): void {
    this.#members.add(member);
    if (this.#timer === undefined) {
      this.#timer = setInterval(this.#tick, this.tickMs);
      // The sockets keep the process alive; this timer must not.
      this.#timer.unref();
    }
  }

  delete(member: Paced): void {
    this.#members.delete(member);
    if (this.#members.size === 0) this.stop();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Runs one tick now (also used to send a chunk the moment it is queued on an idle session). */
  readonly #tick = (): void => {
    const now = performance.now();
    for (const m of this.#members) m.service(now);
  };
}
