/**
 * builtin:wav with files at rates outside the resampler's set, in stereo: what the provider receives is
 * the file's tone, on time, as long as the file.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import wavefile from 'wavefile';
import { createResampler } from '../../src/audio/resampler.js';
import { fitTone } from '../../src/audio/tone.js';
import { pcm16Samples } from '../helpers/audio.js';
import { startBridge, useBridge } from '../helpers/bridge.js';
import { captureLog } from '../helpers/log-capture.js';
import { TestProvider } from '../helpers/provider.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const t = useBridge();

/** A stereo WAV of `seconds` of a `hz` tone at `rate` (the channels in phase). */
function stereoToneWav(rate: number, hz: number, seconds: number): string {
  const n = Math.round(rate * seconds);
  const samples = Array.from({ length: n }, (_, i) =>
    Math.round(0.4 * 32767 * Math.sin((2 * Math.PI * hz * i) / rate)),
  );
  const wav = new wavefile.WaveFile();
  wav.fromScratch(2, rate, '16', [samples, samples]);
  const path = join(mkdtempSync(join(tmpdir(), 'vb-wav-')), `tone-${rate}.wav`);
  writeFileSync(path, wav.toBuffer());
  return path;
}

describe('builtin:wav at any rate', () => {
  it.each([11025, 32000])(
    'plays a %i Hz stereo WAV: the tone, on time, as long as the file',
    async (rate) => {
      t.bridge = await startBridge({ BOT_URL: `builtin:wav:${stereoToneWav(rate, 600, 0.8)}` });
      const p = new TestProvider(t.bridge.mediaUrl, { token: await t.bridge.mediaToken() });
      t.providers.push(p);
      await p.start(`wav-${rate}`);
      // 0.8 s at 8 kHz is 40 chunks of 320 bytes; the bot sends nothing after the file.
      await waitFor(() => p.audio.length >= 39, 4_000, 'wav audio');
      // Whatever is still paced out arrives; nothing past the file's end does.
      await quietFor(300, 'audio past the end of the file');
      expect(p.errors()).toEqual([]);
      const x = pcm16Samples(p.audioBytes());
      const fit = fitTone(x.subarray(400, 6000), 600, 8000);
      // wavefile's sinc resampler takes the odd rates: measured 21 dB at 11025 Hz, 30 dB at 32000 Hz.
      expect(fit.snrDb).toBeGreaterThan(18);
      expect(fit.amplitude).toBeGreaterThan(0.35); // of full scale
      // Where the tone is: from the start (no file resampler delay in front) for 0.8 s, within one chunk.
      let first = -1;
      let last = -1;
      for (let i = 0; i < x.length; i++) {
        if (Math.abs(x[i]!) > 2000) {
          if (first < 0) first = i;
          last = i;
        }
      }
      // The live bot -> caller resampler's own delay is all that comes before the tone.
      const r = createResampler(16000, 8000);
      const liveDelay = Math.round((r.latencyMs * 8000) / 1000);
      r.free();
      expect(first).toBeLessThanOrEqual(liveDelay + 2);
      expect(Math.abs(last + 1 - first - 6400)).toBeLessThanOrEqual(160);
      expect(Math.abs(x.length - 6400)).toBeLessThanOrEqual(160); // nothing after the file, nothing lost
    },
  );
});

describe("a tenant's builtin:wav bot_url", () => {
  async function putBotUrl(bot_url: string): Promise<number> {
    const res = await fetch(`${t.bridge!.http}/v1/media-stream`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${await t.bridge!.restToken(['media:manage'])}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ media_ws_url: 'ws://127.0.0.1:9/v1/media', bot_url }),
    });
    return res.status;
  }

  it('plays a file named relative to BOT_WAV_DIR; one stored outside the current BOT_WAV_DIR is refused at session_start', async () => {
    const file = stereoToneWav(16000, 600, 0.4);
    t.bridge = await startBridge({ BOT_URL: 'builtin:echo', BOT_WAV_DIR: dirname(file) });
    expect(await putBotUrl(`builtin:wav:${basename(file)}`)).toBe(200);
    const p = new TestProvider(t.bridge.mediaUrl, { token: await t.bridge.mediaToken() });
    t.providers.push(p);
    await p.start('tenant-wav-1');
    // 0.4 s at 8 kHz is 20 chunks; the echo bot would send nothing (the caller is silent).
    await waitFor(() => p.audio.length >= 19, 3_000, 'wav audio');
    expect(fitTone(pcm16Samples(p.audioBytes()).subarray(400, 3000), 600, 8000).snrDb).toBeGreaterThan(18);
    expect(p.errors()).toEqual([]);

    // An absolute path inside BOT_WAV_DIR is accepted too; stored, it outlives a restart with another
    // BOT_WAV_DIR (the same entry, as a shared store keeps it): then it is not played.
    expect(await putBotUrl(`builtin:wav:${file}`)).toBe(200);
    const stored = await t.bridge.bridge.ctx.tenants.getMediaStream('default');
    expect(stored?.bot_url).toBe(`builtin:wav:${file}`);
    p.close();
    await t.bridge.close();
    t.bridge = await startBridge({
      BOT_URL: 'builtin:echo',
      BOT_WAV_DIR: mkdtempSync(join(tmpdir(), 'vb-wav-')),
    });
    await t.bridge.bridge.ctx.tenants.putMediaStream(stored!, undefined);
    const q = new TestProvider(t.bridge.mediaUrl, { token: await t.bridge.mediaToken() });
    t.providers.push(q);
    await q.start('tenant-wav-2');
    const err = await q.waitEvent('error', 2_000);
    expect(err.code).toBe('bot_unavailable');
    expect(err.message).toMatch(/refused .*inside BOT_WAV_DIR/);
    // As with a bot that cannot be reached, the call goes on without one.
    await quietFor(200, 'the call to close');
    expect(q.closeCode).toBeUndefined();
  });

  it('a file that cannot be played: the provider hears the path as the tenant wrote it and a code, the log the rest', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vb-wav-'));
    writeFileSync(join(dir, 'junk.wav'), 'not a RIFF file at all');
    const logs = captureLog('debug');
    t.bridge = await startBridge({ BOT_URL: 'builtin:echo', BOT_WAV_DIR: dir }, { log: logs.log });
    for (const [name, id, said] of [
      ['missing.wav', 'wav-missing', 'cannot play builtin:wav:missing.wav (ENOENT)'],
      ['junk.wav', 'wav-junk', 'cannot play builtin:wav:junk.wav (not a WAV file the bridge can play)'],
    ] as const) {
      expect(await putBotUrl(`builtin:wav:${name}`)).toBe(200);
      const p = new TestProvider(t.bridge.mediaUrl, { token: await t.bridge.mediaToken() });
      t.providers.push(p);
      await p.start(id);
      const err = await p.waitEvent('error', 2_000);
      expect(err).toMatchObject({ code: 'bot_unavailable', message: said });
      // No server path, no system error text.
      expect(JSON.stringify(err)).not.toMatch(new RegExp(`${dir}|no such file|tmp|RIFF`, 'i'));
      const warn = logs.find(/WAV bot file cannot be played/, id);
      expect(warn).toHaveLength(1);
      expect(warn[0]).toMatchObject({ level: 40, tenant: 'default', path: join(dir, name) });
      expect(String(warn[0]!.err).length).toBeGreaterThan(0);
    }
  });
});
