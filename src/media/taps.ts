/**
 * A call's audio for whoever asks (listen-in, recordings, level meters): `session.taps`.
 *
 *   caller:  the caller's audio as it arrived from the provider, before the caller leg
 *   bot:     the bot's audio as it leaves for the caller, chunk by chunk as the outbound writer sends it
 *            (after the bot leg, re-chunking and pacing; what was shed or cleared is never tapped)
 *
 * Two kinds of subscriber:
 * - `subscribe(consumer)`: PCM16 mono at the caller's rate (`rate`), decoded from G.711 where needed, the
 *   bot's side resampled from the provider's output rate when that differs. The samples are a view into
 *   a buffer reused for the next chunk: a consumer copies what it keeps.
 * - `observe(raw)`: the bytes as they pass, in the call's codec, with no decode and no copy (a level
 *   meter sums squares in place), the bot's side at `outputRate`.
 *
 * Nothing is decoded or copied while nobody is subscribed: the session and the outbound writer test
 * `active` (one branch per chunk) before tapping. Subscribing and unsubscribing are allowed at any time,
 * from inside a callback too. A subscriber that throws is unsubscribed and logged; the call goes on.
 */
import { decodeInto } from '../audio/codec.js';
import type { Codec } from '../audio/format.js';
import { createResampler, type Resampler } from '../audio/resampler.js';
import type { Logger } from '../log.js';
import type { RawTap, TapConsumer } from './tap-types.js';

export type { RawTap, TapConsumer } from './tap-types.js';

export class SessionTaps {
  readonly codec: Codec;
  /** The caller's rate: the rate of every PCM16 tap, both sides. */
  readonly rate: number;
  /** The provider's output rate: the bot side's rate for raw taps. */
  readonly outputRate: number;
  /** True while anything is subscribed: tap only then. */
  active = false;
  readonly #log: Logger;
  #pcm: readonly TapConsumer[] = [];
  #raw: readonly RawTap[] = [];
  #scratch = new Int16Array(0);
  #resampled = new Int16Array(0);
  #resampler: Resampler | undefined;
  #ended = false;

  constructor(codec: Codec, rate: number, outputRate: number, log: Logger) {
    this.codec = codec;
    this.rate = rate;
    this.outputRate = outputRate;
    this.#log = log;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** PCM16 at the caller's rate, from now until the call ends or the returned function is called. */
  subscribe(consumer: TapConsumer): () => void {
    if (this.#ended) {
      safe(this.#log, () => consumer.end?.());
      return noop;
    }
    this.#pcm = [...this.#pcm, consumer];
    this.#update();
    return () => {
      this.#pcm = this.#pcm.filter((c) => c !== consumer);
      this.#update();
    };
  }

  /** The bytes as they pass, in the call's codec. */
  observe(tap: RawTap): () => void {
    if (this.#ended) {
      safe(this.#log, () => tap.end?.());
      return noop;
    }
    this.#raw = [...this.#raw, tap];
    this.#update();
    return () => {
      this.#raw = this.#raw.filter((c) => c !== tap);
      this.#update();
    };
  }

  /** The caller's chunk as it arrived (the session calls this only while `active`). */
  caller(bytes: Uint8Array): void {
    const raw = this.#raw;
    for (let i = 0; i < raw.length; i++) {
      const t = raw[i]!;
      try {
        t.caller?.(bytes);
      } catch (err) {
        this.#failed(t, err);
      }
    }
    const pcm = this.#pcm;
    if (pcm.length === 0) return;
    const samples = this.#decode(bytes);
    for (let i = 0; i < pcm.length; i++) {
      const c = pcm[i]!;
      try {
        c.caller?.(samples);
      } catch (err) {
        this.#failed(c, err);
      }
    }
  }

  /** The bot's chunk as it leaves for the caller, at the output rate (only while `active`). */
  bot(bytes: Uint8Array): void {
    const raw = this.#raw;
    for (let i = 0; i < raw.length; i++) {
      const t = raw[i]!;
      try {
        t.bot?.(bytes);
      } catch (err) {
        this.#failed(t, err);
      }
    }
    const pcm = this.#pcm;
    if (pcm.length === 0) return;
    let samples = this.#decode(bytes);
    if (this.outputRate !== this.rate) samples = this.#resample(samples);
    for (let i = 0; i < pcm.length; i++) {
      const c = pcm[i]!;
      try {
        c.bot?.(samples);
      } catch (err) {
        this.#failed(c, err);
      }
    }
  }

  /** The call is over: every subscriber's `end`, then nothing more. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    const all = [...this.#raw, ...this.#pcm];
    this.#raw = [];
    this.#pcm = [];
    this.active = false;
    for (const c of all) safe(this.#log, () => c.end?.());
    this.#resampler?.free();
    this.#resampler = undefined;
  }

  #update(): void {
    this.active = !this.#ended && (this.#pcm.length > 0 || this.#raw.length > 0);
  }

  /** A subscriber threw: it is unsubscribed (no `end`), and the call goes on. */
  #failed(sub: TapConsumer | RawTap, err: unknown): void {
    this.#log.warn({ err: (err as Error)?.message }, 'audio tap subscriber failed; unsubscribed');
    this.#raw = this.#raw.filter((c) => c !== sub);
    this.#pcm = this.#pcm.filter((c) => c !== sub);
    this.#update();
  }

  #decode(bytes: Uint8Array): Int16Array {
    const n = this.codec === 'slin' ? bytes.byteLength >> 1 : bytes.byteLength;
    if (this.#scratch.length < n) this.#scratch = new Int16Array(n);
    const even = this.codec === 'slin' && (bytes.byteLength & 1) === 1 ? bytes.subarray(0, n * 2) : bytes;
    decodeInto(this.codec, even, this.#scratch);
    return this.#scratch.subarray(0, n);
  }

  #resample(samples: Int16Array): Int16Array {
    if (this.#resampler === undefined) this.#resampler = createResampler(this.outputRate, this.rate);
    const r = this.#resampler;
    const max = r.maxOutput(samples.length);
    if (this.#resampled.length < max) this.#resampled = new Int16Array(max);
    const n = r.process(samples, this.#resampled, samples.length, 0);
    return this.#resampled.subarray(0, n);
  }
}

/** Runs a subscriber's `end`; a throw is logged. */
function safe(log: Logger, f: () => void): void {
  try {
    f();
  } catch (err) {
    log.warn({ err: (err as Error)?.message }, 'audio tap subscriber failed at the end of the call');
  }
}

function noop(): void {}
