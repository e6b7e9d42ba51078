/**
 * Every emulated provider completes a call against a fake bridge that follows the platform's documents:
 * the platform's handshake and auth arrive, the caller's tone reaches the bridge and the bridge's tone
 * reaches the caller at >= 30 dB SNR, and the bridge's mark is acknowledged only after its audio played.
 */
import { randomUUID } from 'node:crypto';
import twilio from 'twilio';
import { afterEach, describe, expect, it } from 'vitest';
import { generateTone, steadyToneSnrDb } from '../../src/audio/tone.js';
import { type CallerOptions, SyntheticCall } from '../../src/emulator/caller.js';
import { type DialectName, dialectRate } from '../../src/emulator/dialects/index.js';
import { joined } from '../helpers/audio.js';
import { conforming, type FakeBridge, startFake } from './dialect-fakes.js';

// biome-ignore lint/suspicious/noExplicitAny: the tests read the provider's JSON frames field by field.
type Json = Record<string, any>;

const CALLER_HZ = 440;
const REPLY_HZ = 1000;
const TWILIO_TOKEN = 'twilio-auth-token-for-tests';

const fakes: FakeBridge[] = [];
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()));
});

function callOptions(dialect: DialectName, url: string, rate: number, seconds: number): CallerOptions {
  return {
    url,
    sessionId: dialect === 'audiosocket' ? randomUUID() : `CA${randomUUID().replaceAll('-', '')}`,
    customerPhone: '15550100',
    direction: 'inbound',
    dialect,
    rate,
    format:
      dialect === 'default'
        ? { codec: 'slin', inputRate: rate, outputRate: rate, encoding: 'binary', chunkBytes: rate / 25 }
        : undefined,
    auth:
      dialect === 'twilio'
        ? { token: TWILIO_TOKEN }
        : dialect === 'telnyx'
          ? { token: 'telnyx-stream-token' }
          : dialect === 'exotel' || dialect === 'jambonz' || dialect === 'asterisk'
            ? { username: 'key', password: 'secret' }
            : dialect === 'vonage' || dialect === 'plivo'
              ? { header: { name: 'x-bridge-token', value: 'configured' } }
              : undefined,
    audio: generateTone(CALLER_HZ, rate, Math.round(rate * seconds), 0.5),
    dtmf: [{ digit: '7', atMs: 300 }],
    keepReceived: true,
    tailMs: 400,
  };
}

/** The caller's key press as each platform reports it to the app. */
const DTMF_SEEN: Record<DialectName, (m: Json) => boolean> = {
  default: (m) => m.event === 'dtmf' && m.digit === '7',
  twilio: (m) => m.event === 'dtmf' && m.dtmf?.digit === '7' && m.dtmf?.track === 'inbound_track',
  telnyx: (m) => m.event === 'dtmf' && m.dtmf?.digit === '7',
  plivo: (m) => m.event === 'dtmf' && m.dtmf?.digit === '7',
  exotel: (m) => m.event === 'dtmf' && m.dtmf?.digit === '7',
  vonage: (m) => m.event === 'websocket:dtmf' && m.digit === '7',
  jambonz: (m) => m.event === 'dtmf' && m.dtmf === '7',
  asterisk: (m) => (m as unknown) === 'DTMF_END digit:7',
  audiosocket: (m) => m.type === 0x03 && m.payload === '7',
};

const CASES: [DialectName, number][] = [
  ['default', 16000],
  ['twilio', 8000],
  ['telnyx', 8000],
  ['plivo', 8000],
  ['exotel', 8000],
  ['exotel', 16000],
  ['vonage', 16000],
  ['vonage', 8000],
  ['jambonz', 16000],
  ['asterisk', 8000],
  ['audiosocket', 8000],
];

describe('each emulated provider against a conforming fake bridge', () => {
  it.each(CASES)(
    '%s at %i Hz: handshake, tone SNR >= 30 dB both ways, mark after its audio',
    async (dialect, asked) => {
      const rate = dialectRate(dialect, asked);
      const fake = await startFake(dialect, rate, conforming(REPLY_HZ, 1, rate));
      fakes.push(fake);
      const call = new SyntheticCall(callOptions(dialect, fake.url, rate, 1.6));
      const report = await call.run();
      const peer = fake.peers[0]!;

      expect(report.state).toBe('ended');
      expect(report.breaches).toEqual([]);
      expect(report.errors).toEqual([]);
      // The caller's tone, as the bridge decoded it.
      expect(steadyToneSnrDb(joined(peer.heard), CALLER_HZ, rate)).toBeGreaterThanOrEqual(30);
      // The bridge's tone, as the caller heard it at playout.
      expect(steadyToneSnrDb(report.received, REPLY_HZ, report.outputRate)).toBeGreaterThanOrEqual(30);
      expect(report.received.length).toBeGreaterThanOrEqual(report.outputRate * 0.98);
      // The key press, the platform's way.
      expect(report.dtmfSent).toBe(1);
      expect((peer.control as Json[]).filter(DTMF_SEEN[dialect])).toHaveLength(1);
      if (dialect !== 'audiosocket') {
        expect(peer.acks).toEqual(['reply-done']);
        // Vonage's notify has no name, only a payload (sent back as is): the emulator numbers them.
        const name = dialect === 'vonage' ? 'notify-1' : 'reply-done';
        expect(report.ackedMarks.map((m) => [m.name, m.how])).toEqual([[name, 'played']]);
        // The mark fired after the last of the audio before it had played.
        const t = report.timeline;
        const markAt = t.findIndex((e) => e.kind === 'mark');
        expect(t.slice(markAt + 1).some((e) => e.kind === 'audio')).toBe(false);
        const lastAudio = t.filter((e) => e.kind === 'audio').at(-1)!;
        expect(t[markAt]!.atMs).toBeGreaterThanOrEqual(lastAudio.atMs);
      }
    },
  );
});

describe('handshakes as the platforms make them', () => {
  async function firstFrames(dialect: DialectName, rate: number) {
    const fake = await startFake(dialect, rate, () => {});
    fakes.push(fake);
    const o = callOptions(dialect, fake.url, rate, 0.2);
    const report = await new SyntheticCall(o).run();
    return { peer: fake.peers[0]!, report, o, url: fake.url };
  }

  it('twilio: X-Twilio-Signature that the vendor library accepts, then connected and start', async () => {
    const { peer, o, url } = await firstFrames('twilio', 8000);
    const sig = peer.req!.headers['x-twilio-signature'] as string;
    // Twilio signs the wss:// URL its TwiML names; the emulator's plain ws:// call signs that form.
    const wss = url.replace(/^ws:/, 'wss:');
    expect(twilio.validateRequest(TWILIO_TOKEN, sig, wss, {})).toBe(true);
    expect(twilio.validateRequest('another-token', sig, wss, {})).toBe(false);
    const [connected, start] = peer.control as Json[];
    expect(connected).toEqual({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    expect(start).toMatchObject({
      event: 'start',
      sequenceNumber: '1',
      start: {
        callSid: o.sessionId,
        tracks: ['inbound'],
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    });
    expect(start!.streamSid).toBe(start!.start.streamSid);
    const media = (peer.control as Json[]).find((m) => m.event === 'media')!;
    expect(media.media).toMatchObject({ track: 'inbound', chunk: '1', timestamp: '0' });
    expect(typeof media.sequenceNumber).toBe('string');
    expect((peer.control as Json[]).at(-1)!.event).toBe('stop');
  });

  it('telnyx: the streaming token as header and in connected; start with media_format', async () => {
    const { peer, o } = await firstFrames('telnyx', 8000);
    expect(peer.req!.headers['x-telnyx-streaming-auth-token']).toBe('telnyx-stream-token');
    const [connected, start] = peer.control as Json[];
    expect(connected).toMatchObject({ event: 'connected', version: '1.0.0' });
    expect(start).toMatchObject({
      event: 'start',
      start: {
        call_control_id: o.sessionId,
        media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 },
      },
    });
  });

  it('plivo: start first, no connected', async () => {
    const { peer, o } = await firstFrames('plivo', 8000);
    expect(peer.req!.headers['x-bridge-token']).toBe('configured');
    expect((peer.control[0] as Json).event).toBe('start');
    expect(peer.control[0]).toMatchObject({
      start: { callId: o.sessionId, mediaFormat: { encoding: 'audio/x-mulaw' } },
    });
    expect(peer.control.some((m) => (m as Record<string, unknown>).event === 'connected')).toBe(false);
  });

  it('exotel: HTTP Basic, connected then start with slin at the call rate', async () => {
    const { peer } = await firstFrames('exotel', 16000);
    expect(peer.req!.headers.authorization).toBe(`Basic ${Buffer.from('key:secret').toString('base64')}`);
    const [connected, start] = peer.control as Json[];
    expect(connected).toEqual({ event: 'connected' });
    expect(start!.start.media_format).toEqual({
      encoding: 'audio/x-raw',
      sample_rate: '16000',
      bit_rate: '16',
    });
    // ~100 ms chunks: 1,600 samples at 16 kHz.
    const media = (peer.control as Json[]).find((m) => m.event === 'media')!;
    expect(Buffer.from(media.media.payload, 'base64').byteLength).toBe(3200);
  });

  it('vonage: websocket:connected with content-type first, then 20 ms binary', async () => {
    const { peer } = await firstFrames('vonage', 16000);
    expect(peer.control[0]).toMatchObject({
      event: 'websocket:connected',
      'content-type': 'audio/l16;rate=16000',
    });
    expect(peer.heard[0]!.length).toBe(320);
  });

  it('jambonz: subprotocol audio.jambonz.org, Basic auth, one metadata frame', async () => {
    const { peer, o } = await firstFrames('jambonz', 16000);
    expect(peer.req!.headers['sec-websocket-protocol']).toBe('audio.jambonz.org');
    expect(peer.req!.headers.authorization).toMatch(/^Basic /);
    expect(peer.control).toHaveLength(1);
    expect(peer.control[0]).toMatchObject({ callSid: o.sessionId, sampleRate: 16000, mixType: 'mono' });
  });

  it('asterisk: MEDIA_START in plain text with the optimal frame size', async () => {
    const { peer, o } = await firstFrames('asterisk', 8000);
    const start = String(peer.control[0]);
    expect(start.startsWith('MEDIA_START ')).toBe(true);
    expect(start).toContain('format:ulaw');
    expect(start).toContain('optimal_frame_size:160');
    expect(start).toContain(`channel_id:${o.sessionId}`);
    expect(peer.heard[0]!.length).toBe(160);
  });

  it('audiosocket: the UUID frame first, then 320-byte slin frames', async () => {
    const { peer, o } = await firstFrames('audiosocket', 8000);
    expect(peer.ids.uuid).toBe(o.sessionId.replaceAll('-', ''));
    expect(peer.heard[0]!.length).toBe(160);
  });

  it('a refused upgrade is reported with its status and the call fails', async () => {
    const { createServer } = await import('node:http');
    const server = createServer((_req, res) => res.end());
    server.on('upgrade', (_req, socket) => socket.end('HTTP/1.1 403 Forbidden\r\n\r\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const report = await new SyntheticCall(
        callOptions('twilio', `ws://127.0.0.1:${port}/v1/media/twilio`, 8000, 0.2),
      ).run();
      expect(report.state).toBe('failed');
      expect(report.errors[0]).toMatchObject({ code: 'http_403' });
    } finally {
      server.close();
    }
  });
});
