/**
 * Signal helpers for audio tests and benchmarks: tone generation and measurement by least-squares
 * sinusoid fits (exact at any frequency and length, no window leakage), a band-limited error spectrum
 * by FFT, and a small WAV reader for the committed fixtures. Double precision throughout.
 */
import { readFileSync } from 'node:fs';

/** A PCM16 tone `amplitude * sin(2*pi*hz*t + phase)`, rounded to nearest. */
export function tone(rate: number, hz: number, samples: number, amplitude: number, phase = 0): Int16Array {
  const out = new Int16Array(samples);
  const w = (2 * Math.PI * hz) / rate;
  for (let n = 0; n < samples; n++) out[n] = Math.round(amplitude * Math.sin(w * n + phase));
  return out;
}

/** Sum of PCM16 tones (each `amplitude`), rounded once. */
export function tones(
  rate: number,
  freqs: readonly number[],
  samples: number,
  amplitude: number,
): Int16Array {
  const out = new Int16Array(samples);
  for (let n = 0; n < samples; n++) {
    let v = 0;
    for (const hz of freqs) v += amplitude * Math.sin((2 * Math.PI * hz * n) / rate);
    out[n] = Math.round(v);
  }
  return out;
}

export interface SineFit {
  /** Amplitude of each frequency fitted, in the samples' units. */
  readonly amplitudes: number[];
  /** Phase of each (radians, of a cosine). */
  readonly phases: number[];
  /** Mean square of what the fit (all sinusoids plus DC) leaves. */
  readonly residualPower: number;
}

/**
 * Least-squares fit of DC plus a sinusoid at each of `freqs` to x[from..to). Solves the normal
 * equations in double precision (Gaussian elimination with partial pivoting); exact for tones that do
 * not fall on whole periods of the segment, unlike a DFT bin.
 */
export function fitSines(
  x: ArrayLike<number>,
  rate: number,
  freqs: readonly number[],
  from = 0,
  to = x.length,
): SineFit {
  const K = 1 + 2 * freqs.length;
  const A = Array.from({ length: K }, () => new Float64Array(K + 1));
  const basis = new Float64Array(K);
  const ws = freqs.map((f) => (2 * Math.PI * f) / rate);
  for (let n = from; n < to; n++) {
    basis[0] = 1;
    for (let i = 0; i < ws.length; i++) {
      const a = ws[i]! * n;
      basis[1 + 2 * i] = Math.cos(a);
      basis[2 + 2 * i] = Math.sin(a);
    }
    const v = x[n]!;
    for (let r = 0; r < K; r++) {
      const row = A[r]!;
      const br = basis[r]!;
      for (let c = r; c < K; c++) row[c] = row[c]! + br * basis[c]!;
      row[K] = row[K]! + br * v;
    }
  }
  for (let r = 0; r < K; r++) for (let c = 0; c < r; c++) A[r]![c] = A[c]![r]!;
  const coef = solve(A, K);
  let resid = 0;
  for (let n = from; n < to; n++) {
    let fit = coef[0]!;
    for (let i = 0; i < ws.length; i++) {
      const a = ws[i]! * n;
      fit += coef[1 + 2 * i]! * Math.cos(a) + coef[2 + 2 * i]! * Math.sin(a);
    }
    const e = x[n]! - fit;
    resid += e * e;
  }
  const amplitudes: number[] = [];
  const phases: number[] = [];
  for (let i = 0; i < ws.length; i++) {
    const c = coef[1 + 2 * i]!;
    const s = coef[2 + 2 * i]!;
    amplitudes.push(Math.hypot(c, s));
    phases.push(Math.atan2(-s, c));
  }
  return { amplitudes, phases, residualPower: resid / (to - from) };
}

function solve(A: Float64Array[], K: number): Float64Array {
  for (let c = 0; c < K; c++) {
    let piv = c;
    for (let r = c + 1; r < K; r++) if (Math.abs(A[r]![c]!) > Math.abs(A[piv]![c]!)) piv = r;
    [A[c], A[piv]] = [A[piv]!, A[c]!];
    const pr = A[c]!;
    for (let r = c + 1; r < K; r++) {
      const row = A[r]!;
      const f = row[c]! / pr[c]!;
      for (let k = c; k <= K; k++) row[k] = row[k]! - f * pr[k]!;
    }
  }
  const x = new Float64Array(K);
  for (let r = K - 1; r >= 0; r--) {
    const row = A[r]!;
    let v = row[K]!;
    for (let k = r + 1; k < K; k++) v -= row[k]! * x[k]!;
    x[r] = v / row[r]!;
  }
  return x;
}

/**
 * SNR of a tone that should have come out at `amplitude`: the error is everything but a sinusoid of
 * that exact amplitude at the fitted phase, so a gain error (passband droop or ripple) counts as noise,
 * and so do distortion, aliases and quantization. Phase is free (resamplers delay).
 */
export function toneSnrDb(
  x: ArrayLike<number>,
  rate: number,
  hz: number,
  amplitude: number,
  from = 0,
  to = x.length,
): number {
  const fit = fitSines(x, rate, [hz], from, to);
  const gainErr = fit.amplitudes[0]! - amplitude;
  const noise = fit.residualPower + (gainErr * gainErr) / 2;
  return 10 * Math.log10((amplitude * amplitude) / 2 / noise);
}

/** How far below `reference` amplitude the component at `hz` is, in dB (positive = down). */
export function levelBelowDb(
  x: ArrayLike<number>,
  rate: number,
  hz: number,
  reference: number,
  alsoFit: readonly number[] = [],
  from = 0,
  to = x.length,
): number {
  const fit = fitSines(x, rate, [hz, ...alsoFit], from, to);
  return 20 * Math.log10(reference / Math.max(fit.amplitudes[0]!, 1e-9));
}

/** In-place radix-2 complex FFT (length a power of two). */
export function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      [re[i], re[j]] = [re[j]!, re[i]!];
      [im[i], im[j]] = [im[j]!, im[i]!];
    }
  }
  for (let len = 2; len <= n; len <<= 1) {
    const ang = (-2 * Math.PI) / len;
    for (let i = 0; i < n; i += len) {
      for (let k = 0; k < len / 2; k++) {
        const wr = Math.cos(ang * k);
        const wi = Math.sin(ang * k);
        const a = i + k;
        const b = a + len / 2;
        const xr = re[b]! * wr - im[b]! * wi;
        const xi = re[b]! * wi + im[b]! * wr;
        re[b] = re[a]! - xr;
        im[b] = im[a]! - xi;
        re[a] = re[a]! + xr;
        im[a] = im[a]! + xi;
      }
    }
  }
}

/** Energy of x in 0..maxHz (one-sided, via a zero-padded FFT of the whole signal). */
export function bandEnergy(x: ArrayLike<number>, rate: number, maxHz: number): number {
  let n = 1;
  while (n < x.length) n <<= 1;
  const re = new Float64Array(n);
  const im = new Float64Array(n);
  for (let i = 0; i < x.length; i++) re[i] = x[i]!;
  fft(re, im);
  const top = Math.floor((maxHz / rate) * n);
  let e = 0;
  for (let k = 0; k <= top; k++) e += re[k]! * re[k]! + im[k]! * im[k]!;
  return e;
}

/** SNR of `test` against `ref` (same rate, aligned) counting only 0..maxHz, in dB. */
export function bandSnrDb(
  ref: ArrayLike<number>,
  test: ArrayLike<number>,
  rate: number,
  maxHz: number,
): number {
  const len = Math.min(ref.length, test.length);
  const diff = new Float64Array(len);
  const r = new Float64Array(len);
  for (let i = 0; i < len; i++) {
    r[i] = ref[i]!;
    diff[i] = test[i]! - ref[i]!;
  }
  return 10 * Math.log10(bandEnergy(r, rate, maxHz) / bandEnergy(diff, rate, maxHz));
}

export interface Wav {
  readonly rate: number;
  /** Samples in PCM16 units (float files scaled by 32768). */
  readonly samples: Float64Array;
}

/** Reads a mono PCM16 or float32 WAV. */
export function readWav(path: string): Wav {
  const b = readFileSync(path);
  if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE')
    throw new Error(`${path}: not a WAV`);
  let off = 12;
  let format = 0;
  let bits = 0;
  let rate = 0;
  let channels = 0;
  while (off + 8 <= b.length) {
    const id = b.toString('ascii', off, off + 4);
    const size = b.readUInt32LE(off + 4);
    const body = off + 8;
    if (id === 'fmt ') {
      format = b.readUInt16LE(body);
      channels = b.readUInt16LE(body + 2);
      rate = b.readUInt32LE(body + 4);
      bits = b.readUInt16LE(body + 14);
      if (format === 0xfffe) format = b.readUInt16LE(body + 24);
    } else if (id === 'data') {
      if (channels !== 1) throw new Error(`${path}: ${channels} channels, want mono`);
      const n = Math.floor(size / (bits / 8));
      const samples = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        if (format === 1 && bits === 16) samples[i] = b.readInt16LE(body + 2 * i);
        else if (format === 3 && bits === 32) samples[i] = b.readFloatLE(body + 4 * i) * 32768;
        else throw new Error(`${path}: format ${format}/${bits} bits not supported`);
      }
      return { rate, samples };
    }
    off = body + size + (size & 1);
  }
  throw new Error(`${path}: no data chunk`);
}

/** Float64 samples rounded to PCM16. */
export function toInt16(x: ArrayLike<number>): Int16Array {
  const out = new Int16Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = Math.max(-32768, Math.min(32767, Math.round(x[i]!)));
  return out;
}
