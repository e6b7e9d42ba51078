/**
 * Test helpers for the speech-to-speech stand-ins: the dominant frequency of received audio (an FFT
 * peak, interpolated between bins), PCM16 to bytes and back, and a tone cut into chunks.
 */
import { generateTone } from '../../src/audio/tone.js';
import { fft } from './signal.js';

/** The frequency of the strongest FFT bin of `pcm`, refined by a parabola through its neighbours. */
export function dominantHz(pcm: Int16Array, rate: number): number {
  let n = 1;
  while (n < pcm.length) n <<= 1;
  const re = new Float64Array(n);
  const im = new Float64Array(n);
  for (let i = 0; i < pcm.length; i++) re[i] = pcm[i]!;
  fft(re, im);
  const mag = (k: number) => Math.hypot(re[k]!, im[k]!);
  let best = 1;
  for (let k = 2; k < n / 2; k++) if (mag(k) > mag(best)) best = k;
  const a = mag(best - 1);
  const b = mag(best);
  const c = mag(best + 1);
  const shift = (a - c) / (2 * (a - 2 * b + c) || 1);
  return ((best + shift) * rate) / n;
}

export function pcmBytes(pcm: Int16Array): Buffer {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

/** Little-endian PCM16 bytes (one or many buffers) as samples. */
export function pcmOf(parts: Uint8Array | readonly Uint8Array[]): Int16Array {
  const all = Buffer.concat(Array.isArray(parts) ? (parts as Uint8Array[]) : [parts as Uint8Array]);
  const out = new Int16Array(all.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = all.readInt16LE(2 * i);
  return out;
}

/** `ms` of a `hz` tone (amplitude 0.3) then `silenceMs` of silence, in chunks of `chunkMs`. */
export function toneChunks(
  hz: number,
  rate: number,
  ms: number,
  silenceMs: number,
  chunkMs = 20,
): Int16Array[] {
  const tone = generateTone(hz, rate, Math.round((rate * ms) / 1000), 0.3);
  const all = new Int16Array(tone.length + Math.round((rate * silenceMs) / 1000));
  all.set(tone);
  const step = Math.round((rate * chunkMs) / 1000);
  const out: Int16Array[] = [];
  for (let i = 0; i < all.length; i += step) out.push(all.slice(i, i + step));
  return out;
}
