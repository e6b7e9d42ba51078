/**
 * The audio tap seam (`session.taps`) on a real bridge: the caller's audio as it arrived, the bot's as
 * it left for the caller, PCM16 at the caller's rate; a throwing subscriber harms nothing; `end` at the
 * end of the call; nothing tapped while nobody is subscribed.
 */
import alawmulaw from 'alawmulaw';
import { afterEach, describe, expect, it } from 'vitest';
import type { MediaSession } from '../../src/media/session.js';
import { tonePcm16 } from '../helpers/audio.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { toneSnrDb } from '../helpers/signal.js';
import { waitFor } from '../helpers/wait.js';

let rig: InProcessRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

async function liveSession(id: string): Promise<MediaSession> {
  let s: MediaSession | undefined;
  await waitFor(
    () => {
      s = rig!.bridge.media.find('default', id);
      return s !== undefined;
    },
    3_000,
    `session ${id} live`,
  );
  return s!;
}

function collect() {
  const caller: number[] = [];
  const bot: number[] = [];
  let ended = 0;
  return {
    caller,
    bot,
    get ended() {
      return ended;
    },
    consumer: {
      caller: (pcm: Int16Array) => {
        for (const v of pcm) caller.push(v);
      },
      bot: (pcm: Int16Array) => {
        for (const v of pcm) bot.push(v);
      },
      end: () => {
        ended++;
      },
    },
  };
}

describe('session taps', () => {
  it('gives the caller audio exactly as sent and the echo bot audio as sent to the caller (slin 8 kHz)', async () => {
    rig = await startRig({ env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '100' } });
    const p = await rig.call('tap-slin');
    const s = await liveSession('tap-slin');
    expect(s.taps.active).toBe(false);
    expect(s.taps.rate).toBe(8000);
    const got = collect();
    // A subscriber that throws is dropped; the call and the other subscribers go on.
    s.taps.subscribe({
      caller: () => {
        throw new Error('bad subscriber');
      },
    });
    s.taps.subscribe(got.consumer);
    expect(s.taps.active).toBe(true);
    const tone = tonePcm16(700, 8000, 8000, 9_000);
    await p.sendPaced(tone, 320, 20);
    await waitFor(() => got.bot.length >= 7_000 && got.caller.length >= 8_000, 3_000, 'audio tapped');
    expect(Buffer.from(Int16Array.from(got.caller).buffer).equals(tone)).toBe(true);
    // What was tapped on the bot side is what the provider received, sample for sample.
    const botBytes = Buffer.from(Int16Array.from(got.bot).buffer);
    await waitFor(() => p.audioBytes().length >= botBytes.length, 2_000, 'the tapped audio at the provider');
    const sent = p.audioBytes();
    expect(sent.subarray(0, botBytes.length).equals(botBytes)).toBe(true);
    expect(toneSnrDb(got.bot.slice(800, 6_400), 8000, 700, 9_000)).toBeGreaterThan(40);
    p.send({ event: 'session_end' });
    await p.waitClosed();
    expect(got.ended).toBe(1);
    expect(s.taps.active).toBe(false);
  });

  it('decodes G.711 and resamples the bot side to the caller rate (pcmu in at 8 kHz, out at 16 kHz)', async () => {
    rig = await startRig({ env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '100' } });
    const p = await rig.call('tap-pcmu', {
      start: { codec: 'pcmu', sample_rate: 8000, output_sample_rate: 16000 },
    });
    const s = await liveSession('tap-pcmu');
    const got = collect();
    const off = s.taps.subscribe(got.consumer);
    const tone = tonePcm16(500, 8000, 8000, 9_000);
    const ulaw = Buffer.from(alawmulaw.mulaw.encode(new Int16Array(tone.buffer, tone.byteOffset, 8000)));
    await p.sendPaced(ulaw, 160, 20);
    await waitFor(() => got.bot.length >= 7_000 && got.caller.length >= 8_000, 3_000, 'audio tapped');
    const decoded = alawmulaw.mulaw.decode(ulaw);
    expect(got.caller).toEqual(Array.from(decoded));
    // The bot's 16 kHz audio, tapped at the caller's 8 kHz.
    expect(toneSnrDb(got.bot.slice(1_600, 6_400), 8000, 500, 9_000)).toBeGreaterThan(30);
    off();
    expect(s.taps.active).toBe(false);
    const before = got.caller.length;
    await p.sendPaced(ulaw.subarray(0, 1_600), 160, 20);
    await waitFor(() => p.audio.length > 0, 1_000, 'call still up');
    expect(got.caller.length).toBe(before);
    p.send({ event: 'session_end' });
    await p.waitClosed();
    expect(got.ended).toBe(0);
  });
});
