import alawmulaw from 'alawmulaw';
import { describe, expect, it } from 'vitest';
import {
  bytesFor,
  decodeInto,
  encodeInto,
  fromBase64,
  pcm16View,
  samplesIn,
  toBase64,
} from '../../src/audio/codec.js';
import type { Codec } from '../../src/audio/format.js';
import { BridgeError } from '../../src/errors.js';

const { alaw, mulaw } = alawmulaw;

function tone(freq: number, rate: number, n: number, amp: number): Int16Array {
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amp * Math.sin((2 * Math.PI * freq * i) / rate));
  return out;
}

function snrDb(ref: Int16Array, got: Int16Array): number {
  let sig = 0;
  let err = 0;
  for (let i = 0; i < ref.length; i++) {
    sig += ref[i]! * ref[i]!;
    const d = ref[i]! - got[i]!;
    err += d * d;
  }
  return 10 * Math.log10(sig / err);
}

function roundTrip(codec: Codec, pcm: Int16Array): Int16Array {
  const bytes = new Uint8Array(bytesFor(codec, pcm.length));
  expect(encodeInto(codec, pcm, bytes)).toBe(bytes.length);
  const back = new Int16Array(pcm.length);
  expect(decodeInto(codec, bytes, back)).toBe(pcm.length);
  return back;
}

describe('G.711 tables', () => {
  it('decode every byte exactly as alawmulaw does', () => {
    const all = new Uint8Array(256).map((_, i) => i);
    const out = new Int16Array(256);
    decodeInto('pcmu', all, out);
    expect(Array.from(out)).toEqual(Array.from(mulaw.decode(all)));
    decodeInto('pcma', all, out);
    expect(Array.from(out)).toEqual(Array.from(alaw.decode(all)));
    // Anchors from G.711 itself, not from the library: 0xff is µ-law +0, 0xd5 is A-law +8.
    expect(mulaw.decode(new Uint8Array([0xff, 0x7f, 0x00]))).toEqual(new Int16Array([0, 0, -32124]));
    expect(out[0xd5]).toBe(8);
    expect(out[0x55]).toBe(-8);
  });

  it('encode all 65,536 samples exactly as alawmulaw does', () => {
    const all = new Int16Array(65536).map((_, i) => i - 32768);
    const out = new Uint8Array(65536);
    encodeInto('pcmu', all, out);
    expect(Buffer.from(out).equals(Buffer.from(mulaw.encode(all)))).toBe(true);
    encodeInto('pcma', all, out);
    expect(Buffer.from(out).equals(Buffer.from(alaw.encode(all)))).toBe(true);
  });

  it.each(['pcmu', 'pcma'] as const)('%s round trip of tones keeps ~38 dB SNR', (codec) => {
    for (const [freq, amp] of [
      [300, 16000],
      [1000, 8000],
      [3400, 3000],
    ] as const) {
      const pcm = tone(freq, 8000, 8000, amp);
      const snr = snrDb(pcm, roundTrip(codec, pcm));
      expect(snr, `${codec} ${freq} Hz`).toBeGreaterThan(35);
      expect(snr, `${codec} ${freq} Hz`).toBeLessThan(45); // companding really happened
    }
  });

  it('slin round trip is exact', () => {
    const pcm = tone(1000, 8000, 800, 32767);
    expect(Array.from(roundTrip('slin', pcm))).toEqual(Array.from(pcm));
  });
});

describe('PCM16 views and odd input', () => {
  it('views aligned bytes without copying and copies unaligned ones correctly', () => {
    const pcm = new Int16Array([1, -2, 300, -32768, 32767]);
    const aligned = new Uint8Array(pcm.buffer);
    const view = pcm16View(aligned);
    expect(view.buffer).toBe(pcm.buffer);
    const shifted = new Uint8Array(11);
    shifted.set(aligned, 1);
    const unaligned = shifted.subarray(1);
    expect(unaligned.byteOffset & 1).toBe(1);
    const scratch = new Int16Array(16);
    const copy = pcm16View(unaligned, scratch);
    expect(copy.buffer).toBe(scratch.buffer);
    expect(Array.from(copy)).toEqual([1, -2, 300, -32768, 32767]);
    const out = new Int16Array(5);
    decodeInto('slin', unaligned, out);
    expect(Array.from(out)).toEqual([1, -2, 300, -32768, 32767]);
  });

  it('refuses half a PCM16 sample with odd_length', () => {
    expect(() => samplesIn('slin', 321)).toThrow(BridgeError);
    expect(() => pcm16View(new Uint8Array(3))).toThrow(/even byte count/);
    expect(() => decodeInto('slin', new Uint8Array(5), new Int16Array(8))).toThrow(/got 5/);
    expect(samplesIn('pcmu', 321)).toBe(321);
  });

  it('refuses outputs too small instead of writing past them', () => {
    expect(() => decodeInto('pcmu', new Uint8Array(10), new Int16Array(9))).toThrow(RangeError);
    expect(() => encodeInto('slin', new Int16Array(10), new Uint8Array(19))).toThrow(RangeError);
  });
});

describe('base64', () => {
  it('round trips without copying on the way out', () => {
    const pcm = tone(440, 8000, 160, 12000);
    const bytes = new Uint8Array(pcm.buffer);
    const text = toBase64(bytes);
    expect(text).toBe(Buffer.from(bytes).toString('base64'));
    expect(Array.from(pcm16View(fromBase64(text)))).toEqual(Array.from(pcm));
    expect(fromBase64('').byteLength).toBe(0);
    expect(Array.from(fromBase64('AQI='))).toEqual([1, 2]);
  });

  it.each(['AQI', 'AQ!=', 'A QI', 'AQ=I', '====', 'AQ==AQ=='])('refuses %j with bad_base64', (bad) => {
    expect(() => fromBase64(bad)).toThrow(expect.objectContaining({ code: 'bad_base64' }));
  });
});
