/** Shared helpers of the pipeline tests: signals, measurements, collecting sinks, polling. */
import { bytesFor, decodeInto, encodeInto } from '../../src/audio/codec.js';
import type { Codec } from '../../src/audio/format.js';
import { createResampler } from '../../src/audio/resampler.js';
import type { AudioPipeline, Leg, LegSink } from '../../src/pipeline/types.js';

/** A call's formats, as the tests describe them: the caller's in and out, and the bot's PCM16 rate. */
export interface CallSpec {
  readonly callerIn: { readonly codec: Codec; readonly sampleRate: number };
  readonly callerOut: { readonly codec: Codec; readonly sampleRate: number };
  readonly botRate: number;
}

export function tone(freq: number, rate: number, n: number, amp: number, phase = 0): Int16Array {
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amp * Math.sin((2 * Math.PI * freq * i) / rate + phase));
  return out;
}

/**
 * SNR of a tone of `freq` in `x` (from sample `skip` on): the best-fitting sinusoid (least squares on
 * sin and cos, so any delay or phase is allowed) against everything else.
 */
export function toneSnrDb(x: Int16Array, freq: number, rate: number, skip: number): number {
  let ss = 0;
  let sc = 0;
  let cc = 0;
  let xs = 0;
  let xc = 0;
  const w = (2 * Math.PI * freq) / rate;
  for (let i = skip; i < x.length; i++) {
    const s = Math.sin(w * i);
    const c = Math.cos(w * i);
    ss += s * s;
    cc += c * c;
    sc += s * c;
    xs += x[i]! * s;
    xc += x[i]! * c;
  }
  const det = ss * cc - sc * sc;
  const a = (xs * cc - xc * sc) / det;
  const b = (xc * ss - xs * sc) / det;
  let sig = 0;
  let err = 0;
  for (let i = skip; i < x.length; i++) {
    const fit = a * Math.sin(w * i) + b * Math.cos(w * i);
    sig += fit * fit;
    err += (x[i]! - fit) ** 2;
  }
  return 10 * Math.log10(sig / err);
}

export function asBytes(pcm: Int16Array): Uint8Array {
  return new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

export function pcmOf(bytes: Uint8Array): Int16Array {
  const copy = new Uint8Array(bytes);
  return new Int16Array(copy.buffer, 0, copy.byteLength >> 1);
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

export function encode(codec: Codec, pcm: Int16Array): Uint8Array {
  const out = new Uint8Array(bytesFor(codec, pcm.length));
  encodeInto(codec, pcm, out);
  return out;
}

export function decode(codec: Codec, bytes: Uint8Array): Int16Array {
  const out = new Int16Array(codec === 'slin' ? bytes.byteLength >> 1 : bytes.byteLength);
  decodeInto(codec, bytes, out);
  return out;
}

/** What came out of one leg, in order: audio (copied) and markers, and the resets and gaps it saw. */
export class LegLog implements LegSink {
  readonly chunks: Uint8Array[] = [];
  /** 'a' for each chunk of audio, 'm<token>' for each marker, 'r' for a reset, in arrival order. */
  readonly order: string[] = [];
  readonly gaps: string[] = [];
  readonly resets: boolean[] = [];
  audio(view: Uint8Array): void {
    this.chunks.push(new Uint8Array(view));
    this.order.push('a');
  }
  marker(token: number): void {
    this.order.push(`m${token}`);
  }
  reset(hadAudio: boolean): void {
    this.resets.push(hadAudio);
    this.order.push('r');
  }
  gap(reason: string): void {
    this.gaps.push(reason);
  }
}

/** Keeps both legs' output of a call: `bot` is what reached the bot, `caller` what reached the caller. */
export class Collector {
  readonly up = new LegLog();
  readonly down = new LegLog();
  get bot(): Uint8Array[] {
    return this.up.chunks;
  }
  get caller(): Uint8Array[] {
    return this.down.chunks;
  }
  /** Gaps of the caller -> bot leg. */
  get gaps(): string[] {
    return this.up.gaps;
  }
}

/** A call's two legs, opened as the media session opens them (the bot's leg beside the caller's). */
export interface CallLegs {
  readonly up: Leg;
  readonly down: Leg;
  fromCaller(data: Uint8Array): void;
  fromBot(data: Uint8Array): void;
  close(): void;
}

export function openCall(p: AudioPipeline, spec: CallSpec, k: Collector): CallLegs {
  const bot = { codec: 'slin', rate: spec.botRate } as const;
  const up = p.open({ from: { codec: spec.callerIn.codec, rate: spec.callerIn.sampleRate }, to: bot }, k.up);
  const down = p.open(
    { from: bot, to: { codec: spec.callerOut.codec, rate: spec.callerOut.sampleRate } },
    k.down,
    { near: up },
  );
  return {
    up,
    down,
    fromCaller: (d) => up.push(d),
    fromBot: (d) => down.push(d),
    close: () => {
      up.close();
      down.close();
    },
  };
}

/**
 * What the pipeline must produce, computed without it: the same codec and resampler calls, chunk by
 * chunk, on the test's thread.
 */
export function reference(
  spec: CallSpec,
  callerChunks: readonly Uint8Array[],
  botChunks: readonly Uint8Array[],
): { bot: Uint8Array; caller: Uint8Array } {
  const up = createResampler(spec.callerIn.sampleRate, spec.botRate);
  const down = createResampler(spec.botRate, spec.callerOut.sampleRate);
  const bot: Uint8Array[] = [];
  for (const c of callerChunks) {
    const pcm = decode(spec.callerIn.codec, c);
    const out = new Int16Array(up.maxOutput(pcm.length));
    const n = up.process(pcm, out);
    bot.push(asBytes(out.slice(0, n)));
  }
  const caller: Uint8Array[] = [];
  for (const c of botChunks) {
    const pcm = pcmOf(c);
    const out = new Int16Array(down.maxOutput(pcm.length));
    const n = down.process(pcm, out);
    caller.push(encode(spec.callerOut.codec, out.subarray(0, n)));
  }
  up.free();
  down.free();
  return { bot: concat(bot), caller: concat(caller) };
}

export const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
