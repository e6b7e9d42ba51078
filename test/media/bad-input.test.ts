/**
 * Bad input after session_start: each bad frame gets an `error` event naming what was wrong and what is
 * accepted, is counted, and is skipped; the call goes on with its audio intact, up to a budget of
 * MEDIA_BAD_FRAMES_PER_SEC a second, past which the socket closes with 1008. Before session_start the
 * first bad frame closes the socket (4400), and what follows it is ignored.
 */
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { fitTone } from '../../src/audio/tone.js';
import { BadFrameBudget } from '../../src/media/bad-frames.js';
import { pcm16Samples, tonePcm16 } from '../helpers/audio.js';
import { startBridge, useBridge } from '../helpers/bridge.js';
import { captureLog } from '../helpers/log-capture.js';
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

/** A live call on the rig's bridge (its echo heard once, so frames now reach the session, not the set-up hold). */
async function liveCall(id: string): Promise<TestProvider> {
  const p = new TestProvider(t.bridge!.mediaUrl, { token: await t.bridge!.mediaToken() });
  t.providers.push(p);
  await p.start(id);
  p.sendRaw(tonePcm16(500, 8000, 160));
  await waitFor(() => p.audio.length > 0, 3_000, 'the echo');
  return p;
}

const unknown = (i: number) => JSON.stringify({ event: `x-${i}` });

describe('a budget of bad frames', () => {
  it('counts them over the last second, whenever it ends', () => {
    const b = new BadFrameBudget(3);
    expect([0, 100, 999].map((t) => b.spend(t))).toEqual([true, true, true]);
    expect(b.spend(999.5)).toBe(false);
    // The frame at 0 is a second old at 1000, the one at 100 at 1100, the one at 999 at 1999.
    expect([1000, 1500, 1999, 1999].map((t) => b.spend(t))).toEqual([true, true, true, false]);
    expect(b.spend(3500)).toBe(true);
  });

  it("a burst across a second's edge is counted whole: no more than the budget within any one second", () => {
    const b = new BadFrameBudget(3);
    expect([0, 999, 999].map((t) => b.spend(t))).toEqual([true, true, true]);
    // At 1000 the frame at 0 has aged out; the two at 999 have not, so a fourth within 1 ms is refused.
    expect(b.spend(1000)).toBe(true);
    expect(b.spend(1000)).toBe(false);
  });

  it('holds as many times as the budget: a steady budget a second goes on, one more is refused', () => {
    const b = new BadFrameBudget(100);
    // 100 a second, 10 ms apart, for five seconds (the ring grows, then wraps), then one more at once.
    for (let i = 0; i < 500; i++) expect(b.spend(i * 10)).toBe(true);
    expect(b.spend(4990)).toBe(false);
    expect(b.spend(5000)).toBe(true);
  });

  it('answers every bad frame up to MEDIA_BAD_FRAMES_PER_SEC in a second; the next ends the call with 1008, counted and logged once', async () => {
    const logs = captureLog('info');
    t.bridge = await startBridge({ BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0' }, { log: logs.log });
    const budget = t.bridge.config.mediaBadFramesPerSec;
    expect(budget).toBe(500);
    const p = await liveCall('budget-1');
    // The budget and one more, sent at once (well within a second), then more that must go unread.
    for (let i = 0; i <= budget + 100; i++) p.sendRaw(unknown(i));
    expect(await p.waitClosed(5_000)).toBe(1008);
    const errors = p.errors();
    expect(errors.filter((e) => e.code === 'unknown_event')).toHaveLength(budget);
    expect(errors.at(-1)).toMatchObject({ code: 'bad_frame_flood' });
    expect(String(errors.at(-1)!.message)).toMatch(/more than 500 bad frames within one second/);
    expect(p.closeReason).toBe('too many bad frames');
    // Counted: each bad frame up to the one past the budget; the close once; logged once.
    expect(await badFrameCount('unknown_event')).toBe(budget + 1);
    expect((await t.bridge.bridge.ctx.metrics.badFrameFloods.get()).values[0]!.value).toBe(1);
    expect(logs.find(/flooded bad frames/, 'budget-1')).toHaveLength(1);
    expect(logs.find(/session ended/, 'budget-1')[0]).toMatchObject({
      code: 1008,
      reason: 'bad_frame_flood',
    });
  });

  it('a flooding peer that reads nothing and goes on sending past the close is cut a second later', async () => {
    t.bridge = await startBridge({ BOT_URL: 'builtin:echo', MEDIA_BAD_FRAMES_PER_SEC: '50' });
    const bridge = t.bridge;
    const p = await liveCall('budget-cut');
    // It never reads the close (its socket paused), so it never answers it; and it keeps sending.
    (p.ws as unknown as { _socket: Socket })._socket.pause();
    const t0 = performance.now();
    for (let i = 0; i <= 50; i++) p.sendRaw(unknown(i));
    let sent = 0;
    const gone = waitFor(() => bridge.bridge.media.connections === 0, 5_000, 'the socket to be cut', 10);
    gone.catch(() => {}); // awaited below
    while (bridge.bridge.media.connections > 0 && performance.now() - t0 < 5_000) {
      p.sendRaw(unknown(++sent));
      await reach(t0 + sent * 20);
    }
    await gone;
    const after = performance.now() - t0;
    console.log(`flooding peer cut ${after.toFixed(0)} ms after its flood began, ${sent} frames after it`);
    // Cut near a second after the close, not after ws's 30 s wait for the peer's close frame.
    expect(after).toBeGreaterThan(900);
    expect(after).toBeLessThan(2_500);
  });

  it('the budget every 1.5 s, three times over, keeps the call', async () => {
    t.bridge = await startBridge({
      BOT_URL: 'builtin:echo',
      ECHO_DELAY_MS: '0',
      MEDIA_BAD_FRAMES_PER_SEC: '100',
    });
    const p = await liveCall('budget-2');
    const t0 = performance.now();
    for (let s = 0; s < 3; s++) {
      // 1.5 s apart: the windows cannot overlap whatever the delivery delay of their first frames.
      await reach(t0 + s * 1_500);
      for (let i = 0; i < 100; i++) p.sendRaw(unknown(i));
      await waitFor(() => p.errors().length >= (s + 1) * 100, 3_000, `the answers to batch ${s}`);
    }
    expect(p.errors().every((e) => e.code === 'unknown_event')).toBe(true);
    expect(p.closeCode).toBeUndefined();
    // And the call still carries audio.
    const n = p.audio.length;
    p.sendRaw(tonePcm16(500, 8000, 1600));
    await waitFor(() => p.audio.length >= n + 5, 3_000, 'audio after the bad frames');
  });

  it('before session_start the first bad frame closes the socket (4400); what follows is not read', async () => {
    t.bridge = await startBridge({ BOT_URL: 'builtin:echo' });
    const p = new TestProvider(t.bridge.mediaUrl, { token: await t.bridge.mediaToken() });
    t.providers.push(p);
    await p.opened;
    for (let i = 0; i < 200; i++) p.sendRaw(unknown(i));
    expect(await p.waitClosed(5_000)).toBe(4400);
    await quietFor(100, 'answers to the frames after the first');
    expect(p.errors()).toHaveLength(1);
    expect(p.errors()[0]!.code).toBe('bad_session_start');
    expect(await badFrameCount('bad_session_start')).toBe(1);
  });
});
