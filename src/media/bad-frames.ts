/**
 * A provider socket's budget of bad frames. Each bad frame is answered (an `error` event where the dialect
 * has one), counted and skipped, and the call goes on; but a peer that sends them by the thousand a second
 * is not a provider having a bad moment, and answering every one costs the bridge CPU the other calls
 * need. Past MEDIA_BAD_FRAMES_PER_SEC within any one second the session closes the socket with 1008.
 *
 * Why 500 by default: a provider streams one frame per 20 ms (50 a second), or per 10 ms on a few
 * platforms, and catches up at twice that after a stall; so even a stream whose every frame is bad stays
 * under it, and a few bad frames never cost a call. A bad frame costs the bridge 18-28 us of its main
 * thread (measured: an unknown event, and a frame that is not JSON, each with its error event written
 * back), so a peer just under the budget costs it at most ~1.4 % of a core; the flood it stops (35,500
 * bad frames in 1.9 s) cost a third to a half of one.
 */

/**
 * Counts bad frames over the last second, whenever it ends: the times of those that fell in it are kept
 * (a ring, grown as they come, so a call with none holds nothing), and a frame that would make more than
 * `perSecond` within one second is refused. A burst that straddles any boundary is counted whole.
 */
export class BadFrameBudget {
  readonly perSecond: number;
  /** When the bad frames of the last second came, oldest first from `#head`. */
  #times = new Float64Array(0);
  #head = 0;
  #count = 0;

  constructor(perSecond: number) {
    this.perSecond = perSecond;
  }

  /** Spends one at `now` (ms, monotonic); false when `perSecond` already fell within the second before. */
  spend(now: number): boolean {
    const times = this.#times;
    while (this.#count > 0 && now - times[this.#head]! >= 1000) {
      this.#head = this.#head + 1 === times.length ? 0 : this.#head + 1;
      this.#count--;
    }
    if (this.#count >= this.perSecond) return false;
    if (this.#count === times.length) this.#grow();
    const at = this.#head + this.#count;
    this.#times[at < this.#times.length ? at : at - this.#times.length] = now;
    this.#count++;
    return true;
  }

  /** Twice the room (at most `perSecond`), the times kept in order from 0. */
  #grow(): void {
    const old = this.#times;
    const grown = new Float64Array(Math.min(this.perSecond, Math.max(16, old.length * 2)));
    for (let i = 0; i < this.#count; i++) {
      const at = this.#head + i;
      grown[i] = old[at < old.length ? at : at - old.length]!;
    }
    this.#times = grown;
    this.#head = 0;
  }
}
