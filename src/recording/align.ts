/**
 * Lines a call's two legs up in time for a stereo file: the caller left (channel 0), the bot right
 * (channel 1), PCM16 at one rate. Pure and synchronous: the caller of `push` says what time it is, in
 * frames since the recording began.
 *
 * How the legs are aligned: each leg's audio is laid end to end, and the recording's clock (frames since
 * it began) says where a leg that went quiet starts again. A chunk that arrives when its leg's end lies
 * more than that leg's `toleranceFrames` behind the clock (counting the chunk itself) is placed where
 * the clock says it ends, the gap before it filled with silence: the leg said nothing meanwhile. Within
 * the tolerance the chunk follows on directly, so arrival jitter and short stalls never cut a gap into
 * continuous audio. A leg that sends nothing at all (a bot that listens) is filled with silence up to
 * the clock less its tolerance whenever the other leg pushes, so the other leg's audio is written out
 * rather than held; its next chunk after such silence is placed where the clock says, exactly. Frames are written once both legs have them; what waits is at most about a
 * tolerance of audio, and never more than `capacityFrames` per leg: a leg further ahead than that (a
 * source faster than real time) pushes the other leg's end forward with silence.
 */

export interface AlignOptions {
  /** Frames a leg may hold before it forces the other forward. */
  readonly capacityFrames: number;
  /** Per leg (caller, bot): how far behind the clock its end may lie and still be continuous audio. */
  readonly toleranceFrames: readonly [number, number];
}

/** Receives interleaved stereo frames (L R L R ...), a view valid during the call only. */
export type FrameSink = (interleaved: Int16Array) => void;

export class StereoAligner {
  readonly #legs: [Int16Array, Int16Array];
  /** Frames pending per leg, from frame `#base`. */
  readonly #len: [number, number] = [0, 0];
  /** Whether a leg ends in silence the aligner put there (or has had nothing yet). */
  readonly #quiet: [boolean, boolean] = [true, true];
  /** Frames already handed to the sink. */
  #base = 0;
  readonly #cap: number;
  readonly #tol: readonly [number, number];
  readonly #sink: FrameSink;
  readonly #out: Int16Array;

  constructor(options: AlignOptions, sink: FrameSink) {
    this.#cap = options.capacityFrames;
    this.#tol = options.toleranceFrames;
    this.#legs = [new Int16Array(this.#cap), new Int16Array(this.#cap)];
    this.#out = new Int16Array(this.#cap * 2);
    this.#sink = sink;
  }

  /** Frames handed to the sink so far. */
  get written(): number {
    return this.#base;
  }

  /** Audio of one leg (0 caller, 1 bot) that ends at `now` frames since the start. */
  push(leg: 0 | 1, pcm: Int16Array, now: number): void {
    const other = leg === 0 ? 1 : 0;
    const start = now - pcm.length;
    if (this.#quiet[leg] || this.#end(leg) < start - this.#tol[leg]) this.#padTo(leg, start);
    this.#quiet[leg] = false;
    if (this.#end(other) < now - this.#tol[other]) this.#padTo(other, now - this.#tol[other]);
    let from = 0;
    while (from < pcm.length) {
      const room = this.#cap - this.#len[leg];
      if (room === 0) {
        // This leg is a whole buffer ahead: the other is silent up to here.
        this.#padTo(other, this.#end(leg));
        this.#emit();
        continue;
      }
      const n = Math.min(room, pcm.length - from);
      this.#legs[leg].set(pcm.subarray(from, from + n), this.#len[leg]);
      this.#len[leg] += n;
      from += n;
    }
    this.#emit();
  }

  /** The end of the recording: the shorter leg is filled with silence and everything is written. */
  finish(): void {
    const end = Math.max(this.#end(0), this.#end(1));
    this.#padTo(0, end);
    this.#padTo(1, end);
    this.#emit();
  }

  #end(leg: 0 | 1): number {
    return this.#base + this.#len[leg];
  }

  /** Silence on `leg` up to frame `to`, writing out what is ready whenever the buffer fills. */
  #padTo(leg: 0 | 1, to: number): void {
    while (this.#end(leg) < to) {
      if (this.#len[leg] === this.#cap) {
        // Both legs are full only if the other is at least as far: write out, which frees both.
        const other = leg === 0 ? 1 : 0;
        if (this.#len[other] < this.#cap) this.#padTo(other, this.#end(leg));
        this.#emit();
        continue;
      }
      const n = Math.min(to - this.#end(leg), this.#cap - this.#len[leg]);
      this.#legs[leg].fill(0, this.#len[leg], this.#len[leg] + n);
      this.#len[leg] += n;
      this.#quiet[leg] = true;
    }
  }

  /** Writes out the frames both legs have. */
  #emit(): void {
    const n = Math.min(this.#len[0], this.#len[1]);
    if (n === 0) return;
    const [l, r] = this.#legs;
    const out = this.#out;
    for (let i = 0; i < n; i++) {
      out[2 * i] = l[i]!;
      out[2 * i + 1] = r[i]!;
    }
    this.#sink(out.subarray(0, 2 * n));
    l.copyWithin(0, n, this.#len[0]);
    r.copyWithin(0, n, this.#len[1]);
    this.#len[0] -= n;
    this.#len[1] -= n;
    this.#base += n;
  }
}
