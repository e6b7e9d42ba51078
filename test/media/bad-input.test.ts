/**
 * Bad input after session_start: each bad frame gets an `error` event naming what was wrong and what is
 * accepted, is counted, and is skipped; the call goes on with its audio intact.
 */
import { describe, expect, it } from 'vitest';
import { fitTone } from '../../src/audio/tone.js';
import { pcm16Samples, tonePcm16 } from '../helpers/audio.js';
import { startBridge, useBridge } from '../helpers/bridge.js';
import { TestProvider } from '../helpers/provider.js';
import { quietFor, reach, waitFor } from '../helpers/wait.js';

const t = useBridge();

async function badFrameCount(code: string): Promise<number> {
  const m = await t.bridge!.bridge.ctx.metrics.badFrames.get();
  return m.values.find((v) => v.labels.code === code)?.value ?? 0;
}

describe('bad input', () => {
  it('reports and skips each kind of bad frame; the call and its audio go on', async () => {
    t.bridge = await startBridge({ BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0' });
    const p = new TestProvider(t.bridge.mediaUrl, { token: await t.bridge.mediaToken() });
    t.providers.push(p);
    await p.start('bad-1');
    const bad: [string | Buffer, string, RegExp][] = [
      ['{not json', 'bad_json', /JSON/],
      ['[1,2]', 'bad_json', /JSON objects/],
      [
        JSON.stringify({ event: 'hello' }),
        'unknown_event',
        /session_start, media, dtmf, mark or session_end, got "hello"/,
      ],
      [JSON.stringify({ event: 'media', payload: 'abc$' }), 'bad_base64', /base64/],
      [
        JSON.stringify({ event: 'media', payload: 12 }),
        'invalid_field',
        /payload must be a base64 string, got 12/,
      ],
      [Buffer.alloc(321), 'odd_length', /even byte count\), got 321 bytes/],
      [
        JSON.stringify({ event: 'media', payload: Buffer.alloc(3).toString('base64') }),
        'odd_length',
        /got 3 bytes/,
      ],
      [JSON.stringify({ event: 'session_start', session_id: 'bad-1' }), 'duplicate_session_start', /once/],
      [
        JSON.stringify({ event: 'dtmf', digit: 5 }),
        'invalid_field',
        /digit must be one of 0-9, \*, #, A-D, got 5/,
      ],
      [JSON.stringify({ event: 'mark', name: '' }), 'invalid_field', /name must be a non-empty string/],
      [
        JSON.stringify({ event: 'media', payload: '', seq: 'one' }),
        'invalid_field',
        /seq must be a whole number, got "one"/,
      ],
    ];
    // Good audio with a bad frame after every fourth chunk.
    const tone = tonePcm16(1000, 8000, 8000);
    const t0 = performance.now();
    for (let i = 0, b = 0; i < 50; i++) {
      p.sendRaw(tone.subarray(i * 320, (i + 1) * 320));
      if (i % 4 === 3 && b < bad.length) p.sendRaw(bad[b++]![0]);
      await reach(t0 + (i + 1) * 2);
    }
    await waitFor(() => p.errors().length >= bad.length, 3_000, 'error events');
    const errors = p.errors();
    expect(errors).toHaveLength(bad.length);
    bad.forEach(([, code, message], i) => {
      expect(errors[i]!.code).toBe(code);
      expect(errors[i]!.message).toMatch(message);
    });
    expect(await badFrameCount('odd_length')).toBe(2);
    expect(await badFrameCount('bad_json')).toBe(2);
    expect(await badFrameCount('unknown_event')).toBe(1);
    // The call is still up and every good sample came back, in order.
    await waitFor(() => p.audioBytes().length >= 16_000 - 640, 3_000, 'echoed audio');
    expect(p.closeCode).toBeUndefined();
    const fit = fitTone(pcm16Samples(p.audioBytes()).subarray(200, 7600), 1000, 8000);
    expect(fit.snrDb).toBeGreaterThan(40);
  });

  it.each([
    ['binary', /encoding is binary: audio comes as binary frames/],
    ['base64', /encoding is base64: audio comes as media events, not binary frames/],
  ] as const)(
    'rejects audio in the other encoding in a %s session, and goes on',
    async (encoding, message) => {
      t.bridge = await startBridge({ BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0' });
      const p = new TestProvider(t.bridge.mediaUrl, { token: await t.bridge.mediaToken() });
      t.providers.push(p);
      await p.start(`enc-${encoding}`, { media: { codec: 'slin', sample_rate: 8000, encoding } });
      const tone = tonePcm16(1000, 8000, 1600);
      const good = (pcm: Buffer) =>
        encoding === 'binary' ? p.sendRaw(pcm) : p.send({ event: 'media', payload: pcm.toString('base64') });
      const wrong = (pcm: Buffer) =>
        encoding === 'binary' ? p.send({ event: 'media', payload: pcm.toString('base64') }) : p.sendRaw(pcm);
      good(tone.subarray(0, 1600));
      wrong(tone.subarray(1600, 2400));
      wrong(tone.subarray(2400, 3200));
      await waitFor(() => p.errors().length === 2, 2_000, 'error events');
      for (const e of p.errors()) {
        expect(e.code).toBe('invalid_field');
        expect(e.message).toMatch(message);
      }
      expect(await badFrameCount('invalid_field')).toBe(2);
      // The wrong frames were skipped: only the good 100 ms came back.
      await waitFor(() => p.audioBytes().length >= 1600, 2_000, 'echoed audio');
      await quietFor(200, 'audio of the skipped frames');
      expect(p.audioBytes().length).toBe(1600);
      expect(p.closeCode).toBeUndefined();
    },
  );

  it('accepts binary frames of any whole number of samples', async () => {
    t.bridge = await startBridge({ BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0' });
    const p = new TestProvider(t.bridge.mediaUrl, { token: await t.bridge.mediaToken() });
    t.providers.push(p);
    await p.start('sizes-1');
    const tone = tonePcm16(500, 8000, 4000);
    const sizes = [2, 158, 322, 640, 1000, 6];
    for (let off = 0, i = 0; off < tone.length; i++) {
      const n = sizes[i % sizes.length]!;
      p.sendRaw(tone.subarray(off, off + n));
      off += n;
    }
    await waitFor(() => p.audioBytes().length >= 8000 - 640, 3_000, 'echo');
    expect(p.errors()).toHaveLength(0);
    for (const a of p.audio) expect(a.data.length).toBe(320);
    expect(fitTone(pcm16Samples(p.audioBytes()).subarray(200, 3600), 500, 8000).snrDb).toBeGreaterThan(40);
  });
});
