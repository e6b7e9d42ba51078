/**
 * Pacer clock: when each outbound chunk may leave, against a monotonic time passed in (ms, e.g.
 * `performance.now()`). Pure and synchronous; it owns no timer.
 *
 * Chunk i of a run is due at `t0 + i * chunkMs - leadMs`: the schedule is computed from the run's start,
 * never by adding up sleeps, so timer jitter does not accumulate into drift. The lead lets the first
 * `leadMs` of audio leave at once (the far end's jitter buffer is primed) and absorbs timer jitter later.
 *
 * A run ends when the far end must have run dry: the queue was empty more than one chunk past a chunk's
 * playout time (`t0 + i * chunkMs`), or a chunk leaves that late (the process stalled). The next chunk
 * then starts a new run at the current time, instead of bursting out every chunk "owed" since. The one
 * chunk of grace keeps a coarse timer tick (or audio arriving just in time) from restarting the run, which
 * would let the tick's rounding accumulate into drift.
 */
export class PaceClock {
  readonly chunkMs: number;
  readonly leadMs: number;
  #running = false;
  #t0 = 0;
  #index = 0;

  constructor(chunkMs: number, leadMs: number) {
    if (!(chunkMs > 0)) throw new RangeError('chunkMs must be > 0');
    if (!(leadMs >= 0)) throw new RangeError('leadMs must be >= 0');
    this.chunkMs = chunkMs;
    this.leadMs = leadMs;
  }

  get running(): boolean {
    return this.#running;
  }
  /** Chunks sent in the current run. */
  get index(): number {
    return this.#index;
  }

  /** Earliest time the next chunk may leave; -Infinity between runs (it may leave at once). */
  nextDueAt(): number {
    return this.#running ? this.#t0 + this.#index * this.chunkMs - this.leadMs : -Infinity;
  }

  /** Whether the next chunk may leave at `now`. */
  isDue(now: number): boolean {
    return now >= this.nextDueAt();
  }

  /**
   * Records that the next chunk left at `now`. Returns how late it left against its schedule in ms
   * (0 for the first chunk of a run). A chunk over one chunk past its playout time restarts the run.
   */
  sent(now: number): number {
    if (!this.#running) {
      this.#start(now);
      return 0;
    }
    const due = this.#t0 + this.#index * this.chunkMs;
    const lateness = Math.max(0, now - (due - this.leadMs));
    if (now > due + this.chunkMs) {
      // Stalled past the playout time: the far end has run dry; start afresh rather than burst.
      this.#start(now);
      return lateness;
    }
    this.#index++;
    return lateness;
  }

  /** The queue is empty at `now`: a run whose next chunk is over a chunk past its playout time is over. */
  idle(now: number): void {
    if (this.#running && now > this.#t0 + (this.#index + 1) * this.chunkMs) this.#running = false;
  }

  /** Ends the run at once (after a clear: the far end drops its buffer too). */
  reset(): void {
    this.#running = false;
  }

  #start(now: number): void {
    this.#running = true;
    this.#t0 = now;
    this.#index = 1;
  }
}
