/**
 * Pacer clock: when each outbound chunk may leave, against a monotonic time passed in (ms, e.g.
 * `performance.now()`). Pure and synchronous; it owns no timer.
 *
 * Chunk i of a run is due at `t0 + i * chunkMs - leadMs`: the schedule is computed from the run's start,
 * never by adding up sleeps, so timer jitter does not accumulate into drift. The lead lets the first
 * `leadMs` of audio leave at once (the far end's jitter buffer is primed) and absorbs timer jitter later.
 *
 * Late is not early: a chunk behind its schedule (the process stalled, or the bot's audio came late)
 * leaves at once, and so do the chunks after it until the schedule is met again. Restarting the schedule
 * at every hiccup instead would add each stall to the call's delay for good: on a live stream (an echo,
 * a speech-to-speech bot) the delay would only ever ratchet up, measured at 0.1-2 s after a minute of
 * 100 calls on a busy machine. The catch-up is bounded by `catchUpMs`: a run ends when the queue stays
 * empty, or a chunk leaves, more than `catchUpMs` past a chunk's playout time (`t0 + i * chunkMs`). The
 * far end has then surely run dry (a pause between utterances, a long stall), and the next chunk starts
 * a new run at the current time rather than bursting out everything "owed" since. So a burst never
 * carries more than `leadMs + catchUpMs` of audio ahead of real time, and a coarse timer tick (or audio
 * arriving just in time) never restarts a run, which would let the tick's rounding become drift.
 *
 * A run starts when its first chunk leaves, which is when the audio's own timeline starts for a bot's
 * reply. A live stream (audio made as it is sent, at real time: the caller's own, echoed) has a timeline
 * of its own, and its first chunk may have come late on it (held up with the ones after it, which then
 * came at once): `follow` moves the run's start back to what the stream's chunks show, so the chunks that
 * waited leave at once as any late chunk does, rather than being held for good behind a late first one.
 * It never moves a run's start later, nor more than `catchUpMs` before its first chunk left.
 */
export class PaceClock {
  readonly chunkMs: number;
  readonly leadMs: number;
  readonly catchUpMs: number;
  #running = false;
  #t0 = 0;
  #index = 0;
  /** How far back `follow` may move the run's start: `catchUpMs` before its first chunk left. */
  #earliest = 0;

  /** `catchUpMs` defaults to one chunk: the least that keeps a coarse tick from restarting runs. */
  constructor(chunkMs: number, leadMs: number, catchUpMs = chunkMs) {
    if (!(chunkMs > 0)) throw new RangeError('chunkMs must be > 0');
    if (!(leadMs >= 0)) throw new RangeError('leadMs must be >= 0');
    if (!(catchUpMs >= chunkMs)) throw new RangeError('catchUpMs must be >= chunkMs');
    this.chunkMs = chunkMs;
    this.leadMs = leadMs;
    this.catchUpMs = catchUpMs;
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
   * (0 for the first chunk of a run). A chunk over `catchUpMs` past its playout time restarts the run.
   */
  sent(now: number): number {
    if (!this.#running) {
      this.#start(now);
      return 0;
    }
    const due = this.#t0 + this.#index * this.chunkMs;
    const lateness = Math.max(0, now - (due - this.leadMs));
    if (now > due + this.catchUpMs) {
      // Stalled far past the playout time: the far end has run dry; start afresh rather than burst.
      this.#start(now);
      return lateness;
    }
    this.#index++;
    return lateness;
  }

  /** The queue is empty at `now`: a run whose next chunk is over `catchUpMs` past its playout time is over. */
  idle(now: number): void {
    if (this.#running && now > this.#t0 + this.#index * this.chunkMs + this.catchUpMs) this.#running = false;
  }

  /**
   * A live stream's chunk shows the run's first chunk was ready by `t0` (see the header): the run's
   * start moves back to it, never later, and never more than `catchUpMs` before its first chunk left.
   */
  follow(t0: number): void {
    if (!this.#running || !(t0 < this.#t0)) return;
    this.#t0 = t0 > this.#earliest ? t0 : this.#earliest;
  }

  /** Ends the run at once (after a clear: the far end drops its buffer too). */
  reset(): void {
    this.#running = false;
  }

  #start(now: number): void {
    this.#running = true;
    this.#t0 = now;
    this.#earliest = now - this.catchUpMs;
    this.#index = 1;
  }
}
