/**
 * Audio for tests: tones in, PCM16 samples out (fits and SNR: fitTone in src/audio/tone.ts).
 */

/** A sine as PCM16 LE bytes. */
export function tonePcm16(hz: number, rate: number, samples: number, amplitude = 10_000, phase0 = 0): Buffer {
  const out = Buffer.alloc(samples * 2);
  const w = (2 * Math.PI * hz) / rate;
  for (let i = 0; i < samples; i++) out.writeInt16LE(Math.round(amplitude * Math.sin(phase0 + w * i)), i * 2);
  return out;
}

/** PCM16 LE bytes (any alignment) as numbers. */
export function pcm16Samples(bytes: Uint8Array): Float64Array {
  const n = bytes.byteLength >> 1;
  const out = new Float64Array(n);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < n; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

/** Root-mean-square of samples. */
export function rms(x: Float64Array): number {
  let s = 0;
  for (const v of x) s += v * v;
  return Math.sqrt(s / Math.max(1, x.length));
}

/** PCM16 parts back to back, as one. */
export function joined(parts: readonly Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
