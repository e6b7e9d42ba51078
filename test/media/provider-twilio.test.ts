/**
 * The bridge behind Twilio Media Streams (`/v1/media/twilio[/tenant]`), driven by a client that speaks
 * Twilio's side of the protocol as its documents describe it: `X-Twilio-Signature` on the upgrade,
 * `connected` then `start`, base64 µ-law `media` paced at 20 ms, `dtmf`, `mark` echoes, `stop`.
 */
import { createHmac } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import { pace } from '../../src/emulator/paced-caller.js';
import { tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge } from '../helpers/bridge.js';
import { watchBridge } from '../helpers/bridge-process.js';
import { expectPacedBurst, PlatformSocket } from '../helpers/platform-socket.js';
import { type Rig, startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

const AUTH_TOKEN = 'twilio-auth-token-for-tests';
let bridge: Rig | undefined;
let bot: TestBot | undefined;
const clients: PlatformSocket[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.ws.terminate();
  await bridge?.close();
  bridge = undefined;
  await bot?.close();
  bot = undefined;
});

/** Twilio's side of a bidirectional stream. */
class TwilioSide extends PlatformSocket {
  #seq = 0;
  readonly streamSid = 'MZ00000000000000000000000000000001';

  constructor(url: string, signature: string | undefined) {
    super(url, signature === undefined ? {} : { 'x-twilio-signature': signature }, clients);
  }

  send(event: string, body: Record<string, unknown> = {}): void {
    this.ws.send(
      JSON.stringify({ event, sequenceNumber: String(++this.#seq), streamSid: this.streamSid, ...body }),
    );
  }

  start(callSid: string, params: Record<string, string> = {}): void {
    this.ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    this.send('start', {
      start: {
        streamSid: this.streamSid,
        accountSid: 'AC00000000000000000000000000000001',
        callSid,
        tracks: ['inbound'],
        customParameters: params,
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    });
  }

  media(ulaw: Uint8Array, chunk: number): void {
    this.send('media', {
      media: {
        track: 'inbound',
        chunk: String(chunk),
        timestamp: String(chunk * 20),
        payload: Buffer.from(ulaw).toString('base64'),
      },
    });
  }

  audio(): Buffer {
    return Buffer.concat(
      this.of('media').map((g) => Buffer.from((g.msg.media as { payload: string }).payload, 'base64')),
    );
  }
}

/** Twilio's signature of a GET: base64 HMAC-SHA1 of the full URL, keyed by the auth token. */
function sign(url: string, token = AUTH_TOKEN): string {
  return createHmac('sha1', token).update(url).digest('base64');
}

function ulawTone(hz: number, ms: number): Buffer {
  const pcm = tonePcm16(hz, 8000, ms * 8, 9000);
  const out = Buffer.alloc(ms * 8);
  encodeInto('pcmu', new Int16Array(pcm.buffer, pcm.byteOffset, ms * 8), out);
  return out;
}

async function streamUrl(path = '/v1/media/twilio'): Promise<{ url: string; signed: string }> {
  const host = new URL(bridge!.http).host;
  return { url: `ws://${host}${path}`, signed: `wss://${host}${path}` };
}

describe('Twilio Media Streams in front', () => {
  it('refuses an upgrade without a valid X-Twilio-Signature, before the upgrade', async () => {
    bridge = await startBridge({ TWILIO_AUTH_TOKEN: AUTH_TOKEN });
    const { url, signed } = await streamUrl();
    for (const sig of [undefined, sign(signed, 'another-token'), sign(`${signed}/other`)]) {
      const c = new TwilioSide(url, sig);
      await expect(c.opened).rejects.toThrow();
      expect(c.status).toBe(401);
    }
    // Another tenant has no token configured: refused too.
    const acme = await streamUrl('/v1/media/twilio/acme');
    const c = new TwilioSide(acme.url, sign(acme.signed));
    await expect(c.opened).rejects.toThrow();
    expect(c.status).toBe(401);
    // An unknown dialect is a 404.
    const nope = new TwilioSide(`${url.replace('/twilio', '/nope')}`, undefined);
    await expect(nope.opened).rejects.toThrow();
    expect(nope.status).toBe(404);
  });

  it('carries a call: tone both ways at µ-law SNR, paced, digits, marks, clear, the sessions list and stop', async () => {
    bot = await TestBot.start({ echo: true });
    // In a process of its own: the pacing check below sees the bridge's pauses, not this process's.
    const rig = await startRig({ process: true, env: { TWILIO_AUTH_TOKEN: AUTH_TOKEN, BOT_URL: bot.url } });
    bridge = rig;
    const { url, signed } = await streamUrl();
    const tw = new TwilioSide(url, sign(signed));
    await tw.opened;
    tw.start('CA00000000000000000000000000000042', { from: '+15550123', direction: 'inbound' });
    const conn = await bot.waitConnection();
    expect(conn.sessionStart).toMatchObject({
      session_id: 'CA00000000000000000000000000000042',
      customer_phone: '+15550123',
    });

    // The sessions list names the dialect; consult is refused for it.
    const rest = await bridge.restToken(['sessions:read', 'calls:control']);
    const list = (await (
      await fetch(`${bridge.http}/v1/sessions`, { headers: { authorization: `Bearer ${rest}` } })
    ).json()) as { dialect: string }[];
    expect(list.map((s) => s.dialect)).toEqual(['twilio']);
    const consult = await fetch(`${bridge.http}/v1/sessions/CA00000000000000000000000000000042/consult`, {
      method: 'POST',
      headers: { authorization: `Bearer ${rest}`, 'content-type': 'application/json' },
      body: JSON.stringify({ calledParty: '+15550199' }),
    });
    expect(consult.status).toBe(409);
    expect(((await consult.json()) as { error: string }).error).toBe('unsupported_for_dialect');

    // 1 s of a 1 kHz tone, paced: the echo bot sends it back; Twilio gets base64 µ-law media events.
    const tone = ulawTone(1000, 1000);
    await pace({
      chunkMs: 20,
      chunks: 50,
      send: (i) => tw.media(tone.subarray(i * 160, (i + 1) * 160), i + 1),
    });
    await waitFor(() => tw.audio().length >= 8000, 5_000, 'the echo back');
    const back = tw.audio();
    const pcm = new Int16Array(back.length);
    decodeInto('pcmu', back, pcm);
    const snr = steadyToneSnrDb(trimSilence(pcm, 8000), 1000, 8000)!;
    expect(tw.of('media').every((g) => g.msg.streamSid === tw.streamSid)).toBe(true);
    console.log(`twilio: echo SNR ${snr.toFixed(1)} dB`);
    expect(snr).toBeGreaterThanOrEqual(30);

    // Pacing, the bridge's own: 4 s of bot audio sent at once leaves in 200 media events, 20 ms apart.
    // Past PACE_CATCH_UP_MS (1 s) of quiet, a new run of audio starts a new schedule (no catch-up burst).
    await waitFor(() => performance.now() - tw.of('media').at(-1)!.at > 1_100, 3_000, 'the echo to end');
    const before = tw.of('media').length;
    const watch = watchBridge(rig.process);
    conn.ws.send(tonePcm16(440, 16000, 64000));
    await waitFor(() => tw.of('media').length >= before + 200, 7_000, '4 s of bot audio');
    const burst = tw.of('media').slice(before, before + 200);
    // Judged as received, less only the time this (receiving) process was stopped (see expectPacedBurst).
    expectPacedBurst('twilio', burst, watch);

    // A digit reaches the bot; a bot mark reaches Twilio in its shape, and Twilio's echo reaches the bot.
    tw.send('dtmf', { dtmf: { track: 'inbound_track', digit: '5' } });
    await conn.waitEvent('dtmf', 2_000, (e) => e.digit === '5');
    conn.send({ event: 'mark', name: 'm1' });
    await waitFor(() => tw.of('mark').length === 1, 2_000, 'the mark at Twilio');
    expect(tw.of('mark')[0]!.msg).toEqual({ event: 'mark', streamSid: tw.streamSid, mark: { name: 'm1' } });
    tw.send('mark', { mark: { name: 'm1' } });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm1');
    // The bot's clear becomes Twilio's clear.
    conn.ws.send(tonePcm16(440, 16000, 16000));
    conn.send({ event: 'clear' });
    await waitFor(() => tw.of('clear').length === 1, 2_000, 'the clear at Twilio');
    expect(tw.of('clear')[0]!.msg).toEqual({ event: 'clear', streamSid: tw.streamSid });

    // A bad frame is skipped (Twilio has no error event: nothing is sent back), and the call goes on.
    tw.ws.send('{"event":');
    tw.send('stop', {
      stop: {
        accountSid: 'AC00000000000000000000000000000001',
        callSid: 'CA00000000000000000000000000000042',
      },
    });
    await conn.waitEvent('session_end', 3_000);
    await waitFor(() => tw.closeCode !== undefined, 3_000, 'the stream to close');
    expect(tw.closeCode).toBe(1000);
    expect(tw.of('error')).toEqual([]);
  });
});
