/**
 * Levels in dBFS against signals whose level is known, in every codec, and the voice-activity rule.
 */
import alawmulaw from 'alawmulaw';
import { describe, expect, it } from 'vitest';
import { dbfs, LevelSum, levelOf, sumSquares, VoiceActivity } from '../../src/audio/level.js';
import { tone } from '../helpers/signal.js';

function bytesOf(pcm: Int16Array): Uint8Array {
  return new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

describe('level (dBFS)', () => {
  it('a full-scale sine is -3.01 dBFS, a half-scale one -9.03, a full-scale square 0', () => {
    // 1000 Hz at 8 kHz: whole periods in 8000 samples, so the mean square is exactly a²/2.
    expect(levelOf(tone(8000, 1000, 8000, 32767))!).toBeCloseTo(-3.0103, 3);
    expect(levelOf(tone(8000, 1000, 8000, 16384))!).toBeCloseTo(-9.0309, 2);
    const square = new Int16Array(800).map((_, i) => (i % 2 === 0 ? -32768 : 32767));
    expect(levelOf(square)!).toBeCloseTo(0, 3);
  });

  it('silence and no audio are null (-inf)', () => {
    expect(levelOf(new Int16Array(160))).toBeNull();
    expect(dbfs(0, 0)).toBeNull();
    expect(new LevelSum().take()).toBeNull();
  });

  it('reads PCM16 in place at any alignment, and G.711 through its tables', () => {
    const pcm = tone(8000, 440, 1600, 10_000);
    const exact = levelOf(pcm)!;
    const aligned = bytesOf(pcm);
    const odd = new Uint8Array(aligned.byteLength + 1);
    odd.set(aligned, 1);
    expect(sumSquares('slin', odd.subarray(1))).toBe(sumSquares('slin', aligned));
    expect(dbfs(sumSquares('slin', aligned), 1600)!).toBeCloseTo(exact, 9);
    // G.711 is within its quantization of the linear level.
    const ulaw = alawmulaw.mulaw.encode(pcm);
    const alaw = alawmulaw.alaw.encode(pcm);
    expect(Math.abs(dbfs(sumSquares('pcmu', ulaw), 1600)! - exact)).toBeLessThan(0.1);
    expect(Math.abs(dbfs(sumSquares('pcma', alaw), 1600)! - exact)).toBeLessThan(0.1);
  });

  it('a running sum over chunks equals the level of the whole, and restarts on take', () => {
    const a = tone(8000, 440, 800, 20_000);
    const b = new Int16Array(800);
    const sum = new LevelSum();
    sum.add('slin', bytesOf(a));
    sum.add('slin', bytesOf(b));
    const whole = new Int16Array(1600);
    whole.set(a);
    // Half the time at -7.3 dBFS, half silent: 3 dB below the tone alone.
    expect(sum.take()!).toBeCloseTo(levelOf(whole)!, 9);
    expect(levelOf(whole)!).toBeCloseTo(levelOf(a)! - 3.0103, 2);
    expect(sum.take()).toBeNull();
  });
});

describe('voice activity', () => {
  const loud = sumSquares('slin', bytesOf(tone(8000, 440, 160, 3_000))); // about -20.8 dBFS
  const quiet = sumSquares('slin', bytesOf(tone(8000, 440, 160, 100))); // about -50 dBFS

  it('starts on a voiced chunk and stops after the hang-over, dated at the last voiced chunk', () => {
    const v = new VoiceActivity({ thresholdDbfs: -40, hangoverMs: 300 });
    expect(v.feed(quiet, 160, 20)).toBeUndefined();
    expect(v.feed(loud, 160, 40)).toBe('start');
    expect(v.feed(loud, 160, 60)).toBeUndefined();
    // A pause shorter than the hang-over does not end speech.
    for (let t = 80; t <= 300; t += 20) expect(v.feed(quiet, 160, t)).toBeUndefined();
    expect(v.feed(loud, 160, 320)).toBeUndefined();
    let stop: string | undefined;
    let t = 340;
    for (; stop === undefined && t < 2_000; t += 20) stop = v.feed(quiet, 160, t);
    expect(stop).toBe('stop');
    expect(t - 20).toBe(620);
    expect(v.stoppedAt).toBe(320);
    expect(v.speaking).toBe(false);
  });

  it('a voiced chunk long after the last one (no audio between) is a new start, the old speech stopped', () => {
    const v = new VoiceActivity({ thresholdDbfs: -40, hangoverMs: 300 });
    expect(v.feed(loud, 160, 20)).toBe('start');
    expect(v.feed(loud, 160, 1_000)).toBe('start');
    expect(v.stoppedAt).toBe(20);
    expect(v.poll(1_200)).toBeUndefined();
    expect(v.poll(1_300)).toBe('stop');
  });
});
