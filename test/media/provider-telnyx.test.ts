/**
 * The bridge behind Telnyx media streaming (`/v1/media/telnyx[/tenant]`, RTP mode): a call placed by the
 * emulated Telnyx (frames out of order, its playback rules enforced), and a client written here from
 * Telnyx's documents for what the emulator does not do (L16, a bad frame, pacing as received).
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { generateTone, steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { pace } from '../../src/emulator/paced-caller.js';
import { tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge } from '../helpers/bridge.js';
import { watchBridge } from '../helpers/bridge-process.js';
import { expectPacedBurst, PlatformSocket } from '../helpers/platform-socket.js';
import { type Rig, startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = 'telnyx-stream-token-for-tests';
const CALL = 'v3:telnyx-call-control-id-0042';
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

/** Telnyx's side of a bidirectional RTP-mode stream, L16 at 16 kHz (big-endian, as RTP carries it). */
class TelnyxSide extends PlatformSocket {
  #seq = 0;
  readonly streamId = '32de0dea-53cb-4b21-89a4-9ff7bd7a4a7e';

  constructor(url: string, token: string | undefined) {
    super(url, token === undefined ? {} : { 'x-telnyx-streaming-auth-token': token }, clients);
  }

  send(event: string, body: Record<string, unknown> = {}): void {
    this.ws.send(
      JSON.stringify({ event, sequence_number: String(++this.#seq), ...body, stream_id: this.streamId }),
    );
  }

  start(): void {
    this.ws.send(JSON.stringify({ event: 'connected', version: '1.0.0' }));
    this.send('start', {
      start: {
        user_id: '3e6f995f-85f7-4705-9741-53b116d28237',
        call_control_id: CALL,
        call_session_id: 'ff55a038-4f7e-11ef-a6e4-02420a0d4e68',
        from: '+15550123',
        to: '+15550199',
        tags: [],
        client_state: null,
        custom_parameters: { direction: 'inbound' },
        media_format: { encoding: 'L16', sample_rate: 16000, channels: 1 },
      },
    });
  }

  media(pcm: Int16Array, chunk: number): void {
    const be = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
    const out = Buffer.from(be).swap16();
    this.send('media', {
      media: {
        track: 'inbound',
        chunk: String(chunk),
        timestamp: String(chunk * 20),
        payload: out.toString('base64'),
      },
    });
  }

  /** The bridge's audio as host-order samples. */
  audio(): Int16Array {
    const be = Buffer.concat(
      this.of('media').map((g) => Buffer.from((g.msg.media as { payload: string }).payload, 'base64')),
    );
    const le = Buffer.from(be).swap16();
    return new Int16Array(le.buffer, le.byteOffset, le.byteLength / 2);
  }
}

function wsBase(): string {
  return bridge!.http.replace('http', 'ws');
}

describe('Telnyx media streaming in front', () => {
  it('refuses an upgrade without the stream auth token, before the upgrade', async () => {
    bridge = await startBridge({ TELNYX_STREAM_AUTH_TOKEN: TOKEN });
    for (const token of [undefined, '', 'another-token', `${TOKEN}x`]) {
      const c = new TelnyxSide(`${wsBase()}/v1/media/telnyx`, token);
      await expect(c.opened).rejects.toThrow();
      expect(c.status).toBe(401);
    }
    // Another tenant has no token configured: refused, even with tenant default's.
    const acme = new TelnyxSide(`${wsBase()}/v1/media/telnyx/acme`, TOKEN);
    await expect(acme.opened).rejects.toThrow();
    expect(acme.status).toBe(401);
    const ok = new TelnyxSide(`${wsBase()}/v1/media/telnyx`, TOKEN);
    await ok.opened;
    ok.ws.terminate();
    await bridge.close();
    // No token configured at all: every Telnyx stream is refused.
    bridge = await startBridge({});
    const none = new TelnyxSide(`${wsBase()}/v1/media/telnyx`, TOKEN);
    await expect(none.opened).rejects.toThrow();
    expect(none.status).toBe(401);
  });

  it('carries a call the emulated Telnyx places, frames out of order: tone both ways, DTMF, no rule broken, stop', async () => {
    bot = await TestBot.start({ echo: true });
    bridge = await startBridge({ TELNYX_STREAM_AUTH_TOKEN: TOKEN, BOT_URL: bot.url });
    const call = new SyntheticCall({
      url: `${wsBase()}/v1/media/telnyx`,
      sessionId: CALL,
      customerPhone: '+15550100',
      direction: 'inbound',
      dialect: 'telnyx',
      rate: 8000,
      codec: 'pcmu',
      auth: { token: TOKEN },
      // Each pair of chunks swapped, as Telnyx may deliver them.
      settings: { reorder: true },
      audio: generateTone(440, 8000, 8000 * 1.6, 0.5),
      dtmf: [{ digit: '7', atMs: 300 }],
      keepReceived: true,
      tailMs: 600,
    });
    const running = call.run();
    const conn = await bot.waitConnection();
    expect(conn.sessionStart).toMatchObject({ session_id: CALL, customer_phone: '+15550100' });
    const report = await running;

    expect(report.breaches).toEqual([]);
    expect(report.errors).toEqual([]);
    expect(report.state).toBe('ended');
    // The caller's tone reached the bot in order: a swapped pair would break the tone's phase every 40 ms.
    const heard = conn.audioBytes();
    const atBot = trimSilence(new Int16Array(heard.buffer, heard.byteOffset, heard.byteLength >> 1), 16000);
    const botSnr = steadyToneSnrDb(atBot, 440, 16000)!;
    // The echo, as the caller heard it at Telnyx's playout.
    const callerSnr = steadyToneSnrDb(trimSilence(report.received, 8000), 440, 8000)!;
    console.log(`telnyx: SNR at the bot ${botSnr.toFixed(1)} dB, at the caller ${callerSnr.toFixed(1)} dB`);
    expect(botSnr).toBeGreaterThanOrEqual(30);
    expect(callerSnr).toBeGreaterThanOrEqual(30);
    expect(report.received.length).toBeGreaterThanOrEqual(8000 * 1.4);
    // The digit, and Telnyx's stop as the end of the call.
    await conn.waitEvent('dtmf', 2_000, (e) => e.digit === '7');
    await conn.waitEvent('session_end', 3_000);
  });

  it('L16 both ways in network byte order, paced 20 ms per message, marks, clear, a bad frame skipped, the bot hanging up', async () => {
    bot = await TestBot.start({ echo: true });
    // In a process of its own: the pacing check sees the bridge's pauses, not this process's.
    const rig = await startRig({ process: true, env: { TELNYX_STREAM_AUTH_TOKEN: TOKEN, BOT_URL: bot.url } });
    bridge = rig;
    const tx = new TelnyxSide(`${wsBase()}/v1/media/telnyx`, TOKEN);
    await tx.opened;
    tx.start();
    const conn = await bot.waitConnection();
    expect(conn.sessionStart).toMatchObject({ session_id: CALL, customer_phone: '+15550123' });
    const rest = await bridge.restToken(['sessions:read']);
    const list = (await (
      await fetch(`${bridge.http}/v1/sessions`, { headers: { authorization: `Bearer ${rest}` } })
    ).json()) as { dialect: string; direction?: string }[];
    expect(list.map((s) => s.dialect)).toEqual(['telnyx']);

    // 1 s of a 1 kHz tone at 16 kHz, the echo returns it.
    const tone = tonePcm16(1000, 16000, 16000, 9000);
    const pcm = new Int16Array(tone.buffer, tone.byteOffset, 16000);
    await pace({
      chunkMs: 20,
      chunks: 50,
      send: (i) => tx.media(pcm.subarray(i * 320, (i + 1) * 320), i + 1),
    });
    // A frame that is not JSON is skipped; Telnyx has no error event, so nothing goes back.
    tx.ws.send('{"event":');
    await waitFor(() => tx.audio().length >= 16000, 5_000, 'the echo back');
    const snr = steadyToneSnrDb(trimSilence(tx.audio(), 16000), 1000, 16000)!;
    console.log(`telnyx: L16 echo SNR ${snr.toFixed(1)} dB`);
    expect(snr).toBeGreaterThanOrEqual(30);
    // Every media message holds 20 ms (Telnyx drops messages under 20 ms) and names no stream.
    for (const g of tx.of('media')) {
      expect(Object.keys(g.msg)).toEqual(['event', 'media']);
      expect(Buffer.from((g.msg.media as { payload: string }).payload, 'base64').length).toBe(640);
    }

    // Pacing: 4 s of bot audio sent at once leaves in 200 messages, 20 ms apart.
    await waitFor(() => performance.now() - tx.of('media').at(-1)!.at > 1_100, 3_000, 'the echo to end');
    const before = tx.of('media').length;
    const watch = watchBridge(rig.process);
    conn.ws.send(tonePcm16(440, 16000, 64000));
    await waitFor(() => tx.of('media').length >= before + 200, 7_000, '4 s of bot audio');
    const burst = tx.of('media').slice(before, before + 200);
    expectPacedBurst('telnyx', burst, watch);

    // A digit reaches the bot; a bot mark reaches Telnyx in its shape; Telnyx's echo reaches the bot.
    tx.send('dtmf', { dtmf: { digit: '#' } });
    await conn.waitEvent('dtmf', 2_000, (e) => e.digit === '#');
    conn.send({ event: 'mark', name: 'm1' });
    await waitFor(() => tx.of('mark').length === 1, 2_000, 'the mark at Telnyx');
    expect(tx.of('mark')[0]!.msg).toEqual({ event: 'mark', mark: { name: 'm1' } });
    tx.send('mark', { mark: { name: 'm1' } });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm1');
    // The bot's barge-in: Telnyx gets clear, then the mark queued behind the dropped audio, which it sends
    // back (as Telnyx returns queued marks on clear) and the bot learns of.
    conn.ws.send(tonePcm16(440, 16000, 16000));
    conn.send({ event: 'mark', name: 'm2' });
    conn.send({ event: 'clear' });
    await waitFor(() => tx.of('clear').length === 1 && tx.of('mark').length === 2, 2_000, 'clear and m2');
    expect(tx.of('clear')[0]!.msg).toEqual({ event: 'clear' });
    tx.send('mark', { mark: { name: 'm2' } });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm2');

    // The bot hangs up: the bridge closes the stream.
    conn.send({ event: 'session_end', reason: 'goodbye' });
    await waitFor(() => tx.closeCode !== undefined, 3_000, 'the stream to close');
    expect(tx.closeCode).toBe(1000);
    expect(tx.of('error')).toEqual([]);
  });
});
