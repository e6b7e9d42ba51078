/**
 * A provider socket's budget of bad frames. Each bad frame is answered (an `error` event where the dialect
 * has one), counted and skipped, and the call goes on; but a peer that sends them by the thousand a second
 * is not a provider having a bad moment, and answering every one costs the bridge CPU the other calls
 * need. Past MEDIA_BAD_FRAMES_PER_SEC within one second the session closes the socket with 1008.
 *
 * Why 500 by default: a provider streams one frame per 20 ms (50 a second), or per 10 ms on a few
 * platforms, and catches up at twice that after a stall; so even a stream whose every frame is bad stays
 * under it, and a few bad frames never cost a call. A bad frame costs the bridge 18-28 us of its main
 * thread (measured: an unknown event, and a frame that is not JSON, each with its error event written
 * back), so a peer just under the budget costs it at most ~1.4 % of a core; the flood it stops (35,500
 * bad frames in 1.9 s) cost a third to a half of one.
 */

/** Counts bad frames in one-second windows, each starting at the first bad frame after the last ended. */
export class BadFrameBudget {
  readonly perSecond: number;
  #windowStart = Number.NEGATIVE_INFINITY;
  #spent = 0;

  constructor(perSecond: number) {
    this.perSecond = perSecond;
  }

  /** Spends one at `now` (ms, monotonic); false once more than `perSecond` fell in its window. */
  spend(now: number): boolean {
    if (now - this.#windowStart >= 1000) {
      this.#windowStart = now;
      this.#spent = 0;
    }
    return ++this.#spent <= this.perSecond;
  }
}
