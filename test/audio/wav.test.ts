/**
 * decodeWav: any rate, depth and channel count to PCM16 mono at the wanted rate, without the resampler's
 * delay in front or the tail lost.
 */
import { describe, expect, it } from 'vitest';
import wavefile from 'wavefile';
import { fitTone } from '../../src/audio/tone.js';
import { decodeWav } from '../../src/audio/wav.js';

function toneWav(rate: number, channels: number, seconds: number): Uint8Array {
  const n = Math.round(rate * seconds);
  const s = Array.from({ length: n }, (_, i) =>
    Math.round(0.4 * 32767 * Math.sin((2 * Math.PI * 600 * i) / rate)),
  );
  const wav = new wavefile.WaveFile();
  wav.fromScratch(channels, rate, '16', channels === 1 ? s : Array.from({ length: channels }, () => s));
  return wav.toBuffer();
}

/** First and last index whose magnitude passes `threshold`. */
function extent(x: Int16Array, threshold: number): [number, number] {
  let first = -1;
  let last = -1;
  for (let i = 0; i < x.length; i++) {
    if (Math.abs(x[i]!) > threshold) {
      if (first < 0) first = i;
      last = i;
    }
  }
  return [first, last];
}

describe('decodeWav', () => {
  it.each([
    [22050, 1],
    [48000, 2],
    [11025, 2],
    [32000, 2],
  ])(
    '%i Hz, %i channel(s) -> 16 kHz mono: the tone from the first sample, as long as the file',
    (rate, ch) => {
      const out = decodeWav(toneWav(rate, ch, 0.5), 16000);
      expect(Math.abs(out.length - 8000)).toBeLessThanOrEqual(1);
      const [first, last] = extent(out, 2000);
      expect(first).toBeLessThanOrEqual(3);
      expect(last).toBeGreaterThanOrEqual(out.length - 8); // within half a millisecond
      const fit = fitTone(Array.from(out.subarray(400, 7600)), 600, 16000);
      expect(fit.snrDb).toBeGreaterThan(rate === 11025 ? 18 : 25);
      expect(fit.amplitude).toBeGreaterThan(0.38);
    },
  );

  it('mixes channels down to mono', () => {
    const left = Array.from({ length: 1600 }, () => 1000);
    const right = Array.from({ length: 1600 }, () => 3000);
    const wav = new wavefile.WaveFile();
    wav.fromScratch(2, 16000, '16', [left, right]);
    const out = decodeWav(wav.toBuffer(), 16000);
    expect(out.length).toBe(1600);
    expect(out.every((v) => v === 2000)).toBe(true);
  });

  it('says why bytes are not a WAV file', () => {
    expect(() => decodeWav(Buffer.from('not a wav'), 16000)).toThrow(Error);
  });
});
