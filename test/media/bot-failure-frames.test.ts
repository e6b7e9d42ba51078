/**
 * A bot that cannot be reached, behind each provider dialect: the call goes on, and the provider hears of
 * the failure only in a message its own platform defines (our protocol's `error` event on /v1/media;
 * nothing on the others, which have no such message; nothing on AudioSocket, whose error kind makes
 * Asterisk hang up: docs/providers/audiosocket.md). Every byte the provider side received is checked
 * against that platform's framing: JSON events the platform defines, binary audio of the call's chunk
 * size, AudioSocket type-length records.
 */
import { connect, createServer, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { audioSocketMessage } from '../../src/media/providers/audiosocket.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { quietFor, reach, waitFor } from '../helpers/wait.js';

let rig: InProcessRig | undefined;
const sockets: { close(): void }[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.close();
  await rig?.close();
  rig = undefined;
});

/** A port nothing listens on: a bot there cannot be reached (the dial is refused at once). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface Received {
  readonly binary: boolean;
  readonly data: Buffer;
}

/** A provider's side of one call: its frames in, and a way to send the caller's audio. */
interface Side {
  readonly got: Received[];
  audio(): void;
}

type Obj = Record<string, unknown>;

function json(f: Received): Obj | undefined {
  if (f.binary) return undefined;
  try {
    const v: unknown = JSON.parse(f.data.toString('utf8'));
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
  } catch {
    return undefined;
  }
}

function base64Of(v: unknown): Buffer | undefined {
  if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v)) return undefined;
  return Buffer.from(v, 'base64');
}

/**
 * A JSON text event the platform defines, with its field `key` among `events`; audio (in `media`'s
 * `payload`) of `bytes` bytes. Undefined when it is, else what is wrong.
 */
function jsonEvent(f: Received, key: string, events: readonly string[], bytes: number): string | undefined {
  const o = json(f);
  if (o === undefined) return `not a JSON text event: ${f.data.toString('latin1').slice(0, 60)}`;
  const name = o[key];
  if (typeof name !== 'string' || !events.includes(name))
    return `${key} ${JSON.stringify(name)} is not one it defines`;
  const media = o.media as Obj | undefined;
  if (media !== undefined && base64Of(media.payload)?.length !== bytes)
    return `audio of the wrong size in ${f.data.toString('latin1').slice(0, 60)}`;
  return undefined;
}

/** Binary audio of exactly `bytes` bytes, or a JSON text event as `text` allows. */
function binaryAudio(
  f: Received,
  bytes: number,
  text: (f: Received) => string | undefined,
): string | undefined {
  if (f.binary)
    return f.data.length === bytes ? undefined : `binary audio of ${f.data.length} bytes, not ${bytes}`;
  return text(f);
}

/** A WebSocket provider: `first` frames at open, caller audio from `audio`. */
async function wsSide(
  path: string,
  first: (string | Buffer)[],
  audio: () => string | Buffer,
  protocols: string[] = [],
): Promise<Side> {
  const ws = new WebSocket(`${rig!.http.replace('http', 'ws')}${path}`, protocols);
  sockets.push({ close: () => ws.terminate() });
  const got: Received[] = [];
  ws.on('message', (data: Buffer, isBinary: boolean) => got.push({ binary: isBinary, data }));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  for (const f of first) ws.send(f);
  return { got, audio: () => ws.send(audio()) };
}

/** Asterisk's side of an AudioSocket connection: the bytes in, whole. */
async function audioSocketSide(): Promise<Side & { bytes(): Buffer }> {
  const u = new URL(rig!.bridge.audioSocketUrl!);
  const socket: Socket = connect({ host: u.hostname, port: Number(u.port) });
  sockets.push({ close: () => socket.destroy() });
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  socket.write(audioSocketMessage(0x01, Buffer.from('a1b2c3d4e5f64a7b8c9d0e1f2a3b4c5d', 'hex')));
  const side = {
    got: [] as Received[],
    bytes: () => Buffer.concat(chunks),
    audio: () => socket.write(audioSocketMessage(0x10, Buffer.alloc(320))),
  };
  return side;
}

const ULAW_20MS = Buffer.alloc(160, 0xff);

interface Case {
  readonly dialect: string;
  readonly open: () => Promise<Side>;
  /** Undefined when the frame is one the platform defines, else what is wrong with it. */
  readonly check: (f: Received) => string | undefined;
  /** The error events it must get (only our own protocol has one). */
  readonly errors?: (got: Received[]) => Obj[];
}

const CASES: Case[] = [
  {
    dialect: 'default',
    open: () =>
      wsSide(
        '/v1/media',
        [
          JSON.stringify({
            event: 'session_start',
            session_id: 'bf-default',
            media: { codec: 'pcmu', sample_rate: 8000, encoding: 'binary' },
          }),
        ],
        () => ULAW_20MS,
      ),
    check: (f) =>
      binaryAudio(f, 160, (t) =>
        jsonEvent(t, 'event', ['media', 'mark', 'clear', 'dtmf', 'error', 'session_end'], 160),
      ),
    errors: (got) => got.map(json).filter((o): o is Obj => o?.event === 'error'),
  },
  {
    dialect: 'twilio',
    open: () =>
      wsSide(
        '/v1/media/twilio',
        [
          JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }),
          JSON.stringify({
            event: 'start',
            streamSid: 'MZ1',
            start: {
              streamSid: 'MZ1',
              callSid: 'CA-bf',
              mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
            },
          }),
        ],
        () =>
          JSON.stringify({
            event: 'media',
            media: { track: 'inbound', payload: ULAW_20MS.toString('base64') },
          }),
      ),
    check: (f) => jsonEvent(f, 'event', ['media', 'mark', 'clear'], 160),
  },
  {
    dialect: 'telnyx',
    open: () =>
      wsSide(
        '/v1/media/telnyx',
        [
          JSON.stringify({ event: 'connected', version: '1.0.0' }),
          JSON.stringify({
            event: 'start',
            stream_id: 's1',
            start: { call_control_id: 'v3:bf', media_format: { encoding: 'PCMU', sample_rate: 8000 } },
          }),
        ],
        () => JSON.stringify({ event: 'media', media: { payload: ULAW_20MS.toString('base64') } }),
      ),
    check: (f) => jsonEvent(f, 'event', ['media', 'mark', 'clear'], 160),
  },
  {
    dialect: 'plivo',
    open: () =>
      wsSide(
        '/v1/media/plivo',
        [
          JSON.stringify({
            event: 'start',
            start: {
              callId: 'bf-plivo',
              streamId: 'st1',
              mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 },
            },
          }),
        ],
        () => JSON.stringify({ event: 'media', media: { payload: ULAW_20MS.toString('base64') } }),
      ),
    check: (f) => jsonEvent(f, 'event', ['playAudio', 'checkpoint', 'clearAudio', 'sendDTMF'], 160),
  },
  {
    dialect: 'exotel',
    open: () =>
      wsSide(
        '/v1/media/exotel',
        [
          JSON.stringify({ event: 'connected' }),
          JSON.stringify({
            event: 'start',
            start: {
              stream_sid: 'st1',
              call_sid: 'bf-exotel',
              media_format: { encoding: 'audio/x-raw', sample_rate: '8000' },
            },
          }),
        ],
        () => JSON.stringify({ event: 'media', media: { payload: Buffer.alloc(320).toString('base64') } }),
      ),
    check: (f) => jsonEvent(f, 'event', ['media', 'mark', 'clear'], 3200),
  },
  {
    dialect: 'vonage',
    open: () =>
      wsSide(
        '/v1/media/vonage',
        [JSON.stringify({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=16000' })],
        () => Buffer.alloc(640),
      ),
    check: (f) => binaryAudio(f, 640, (t) => jsonEvent(t, 'action', ['notify', 'clear'], 0)),
  },
  {
    dialect: 'jambonz',
    open: () =>
      wsSide(
        '/v1/media/jambonz',
        [JSON.stringify({ callSid: 'bf-jambonz', sampleRate: 8000, mixType: 'mono' })],
        () => Buffer.alloc(320),
        ['audio.jambonz.org'],
      ),
    check: (f) => binaryAudio(f, 320, (t) => jsonEvent(t, 'type', ['mark', 'killAudio', 'disconnect'], 0)),
  },
  {
    dialect: 'asterisk',
    open: () =>
      wsSide(
        '/v1/media/asterisk',
        [
          'MEDIA_START connection_id:c1 channel:PJSIP/bf channel_id:bf-asterisk format:ulaw optimal_frame_size:160 ptime:20',
        ],
        () => ULAW_20MS,
      ),
    check: (f) =>
      binaryAudio(f, 160, (t) => {
        const word = t.data.toString('utf8').split(' ')[0];
        return ['MARK_MEDIA', 'FLUSH_MEDIA', 'HANGUP'].includes(word ?? '')
          ? undefined
          : `${JSON.stringify(t.data.toString('utf8').slice(0, 60))} is not a chan_websocket command`;
      }),
  },
];

/** Starts a bridge whose bot cannot be reached, given up at the first failure. */
async function bridgeWithoutBot(): Promise<InProcessRig> {
  rig = await startRig({
    env: {
      MEDIA_AUTH: 'none',
      BOT_URL: `ws://127.0.0.1:${await closedPort()}/bot`,
      BOT_RETRIES: '0',
      AUDIOSOCKET_PORT: '0',
      AUDIOSOCKET_HOST: '127.0.0.1',
      AUDIOSOCKET_ALLOW: '127.0.0.1',
    },
  });
  return rig;
}

/** Failed bot dials so far (voicebridge_bot_connects_total{outcome="failed"}). */
async function failedDials(): Promise<number> {
  const m = await rig!.bridge.ctx.metrics.botConnects.get();
  return m.values.filter((v) => v.labels.outcome === 'failed').reduce((n, v) => n + v.value, 0);
}

/** Sends the caller's audio for a while, the bot given up meanwhile, and waits for anything more to come. */
async function callOn(side: Side): Promise<void> {
  const talk = async () => {
    const t0 = performance.now();
    for (let i = 0; i < 10; i++) {
      side.audio();
      await reach(t0 + (i + 1) * 20);
    }
  };
  await talk();
  await waitFor(async () => (await failedDials()) >= 1, 5_000, 'the bot to be given up');
  await talk();
  await quietFor(300, 'frames after the failure');
  expect(rig!.bridge.ctx.sessions.count()).toBe(1);
}

describe('a bot that cannot be reached: each provider gets only frames its platform defines', () => {
  for (const c of CASES) {
    it(c.dialect, async () => {
      await bridgeWithoutBot();
      const side = await c.open();
      await callOn(side);
      const wrong = side.got.map((f) => c.check(f)).filter((p) => p !== undefined);
      expect(wrong).toEqual([]);
      if (c.errors !== undefined) {
        expect(c.errors(side.got)).toEqual([
          expect.objectContaining({ event: 'error', code: 'bot_unavailable' }),
        ]);
      } else expect(side.got).toEqual([]);
    });
  }

  it('audiosocket', async () => {
    await bridgeWithoutBot();
    const side = await audioSocketSide();
    await callOn(side);
    // Every byte in must read as whole type-length records of the protocol's own kinds; with no bot
    // there is no audio to send, and no error kind either (Asterisk hangs up on it).
    const bytes = side.bytes();
    const kinds: number[] = [];
    let at = 0;
    while (at + 3 <= bytes.length) {
      kinds.push(bytes[at]!);
      at += 3 + bytes.readUInt16BE(at + 1);
    }
    expect(at).toBe(bytes.length);
    expect(kinds.filter((k) => k !== 0x10 && k !== 0x00)).toEqual([]);
    expect(bytes.length).toBe(0);
  });
});
