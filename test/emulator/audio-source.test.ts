import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import wavefile from 'wavefile';
import { fitTone, generateTone } from '../../src/audio/tone.js';
import { parseAudioSpec, renderAudio } from '../../src/emulator/audio-source.js';

const hasEspeak = (() => {
  try {
    execFileSync('espeak-ng', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe('synthetic call audio', () => {
  it('parses the four kinds and names what it accepts otherwise', () => {
    expect(parseAudioSpec('tone:1000')).toEqual({ kind: 'tone', hz: 1000 });
    expect(parseAudioSpec('wav:/x.wav')).toEqual({ kind: 'wav', path: '/x.wav' });
    expect(parseAudioSpec('speech:hello there')).toEqual({ kind: 'speech', text: 'hello there' });
    expect(parseAudioSpec('silence')).toEqual({ kind: 'silence' });
    expect(() => parseAudioSpec('noise')).toThrow(
      /audio must be "tone:<hz>", "turns:<hz>\[\/<on ms>\/<off ms>\]", "wav:<path>", "speech:<text>" or "silence"/,
    );
    expect(parseAudioSpec('turns:440')).toEqual({ kind: 'turns', hz: 440, onMs: 1000, offMs: 3000 });
    expect(parseAudioSpec('turns:300/500/1500')).toEqual({ kind: 'turns', hz: 300, onMs: 500, offMs: 1500 });
    expect(() => parseAudioSpec('turns:440/500')).toThrow(/turns:<hz>/);
    expect(() => parseAudioSpec('tone:9000')).toThrow(/below 4000 Hz/);
  });

  it('renders a tone of exactly the asked length', async () => {
    const pcm = await renderAudio({ kind: 'tone', hz: 440 }, 16000, 1.5);
    expect(pcm.length).toBe(24000);
    expect(fitTone(pcm, 440, 16000).snrDb).toBeGreaterThan(80);
  });

  it('renders turns: the tone for on ms, quiet for off ms, again and again', async () => {
    const pcm = await renderAudio({ kind: 'turns', hz: 440, onMs: 500, offMs: 1500 }, 8000, 5);
    expect(pcm.length).toBe(40_000);
    for (const start of [0, 16_000, 32_000]) {
      expect(fitTone(pcm.subarray(start, start + 4000), 440, 8000).snrDb).toBeGreaterThan(60);
      expect(pcm.subarray(start + 4000, start + 16_000).every((v) => v === 0)).toBe(true);
    }
  });

  it('converts a WAV of another rate and depth to PCM16 at the call rate, padded to length', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vb-wav-'));
    const path = join(dir, 'tone.wav');
    const wav = new wavefile.WaveFile();
    const tone = generateTone(440, 16000, 16000, 0.5);
    wav.fromScratch(1, 16000, '16', tone);
    writeFileSync(path, wav.toBuffer());
    const pcm = await renderAudio({ kind: 'wav', path }, 8000, 2);
    expect(pcm.length).toBe(16000);
    expect(fitTone(pcm.subarray(400, 7600), 440, 8000).snrDb).toBeGreaterThan(70);
    expect(pcm.subarray(8200).every((v) => v === 0)).toBe(true);
    await expect(renderAudio({ kind: 'wav', path: join(dir, 'missing.wav') }, 8000, 1)).rejects.toThrow(
      /wav file cannot be read/,
    );
  });

  it.skipIf(!hasEspeak)('speaks text with espeak-ng', async () => {
    const pcm = await renderAudio({ kind: 'speech', text: 'consult answered' }, 8000, 2);
    expect(pcm.length).toBe(16000);
    let energy = 0;
    for (const v of pcm) energy += v * v;
    expect(Math.sqrt(energy / pcm.length)).toBeGreaterThan(300);
  });
});
