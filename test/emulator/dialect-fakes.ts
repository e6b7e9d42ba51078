/**
 * Small fake bridges for the emulator's dialect tests, each written from its platform's documents: a
 * WebSocket (or TCP, for AudioSocket) server that reads the caller's audio in that dialect and answers
 * in it. The conforming one paces a reply tone in the platform's framing and then asks for a playback
 * acknowledgement; tests pass their own `script` for non-conforming behaviour.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import WebSocket, { WebSocketServer } from 'ws';
import { decodeInto, encodeInto, fromBase64, toBase64 } from '../../src/audio/codec.js';
import { generateTone } from '../../src/audio/tone.js';
import {
  AUDIOSOCKET_RATE_TYPES,
  AudioSocketParser,
  audioSocketFrame,
} from '../../src/emulator/dialects/audiosocket.js';
import type { DialectName } from '../../src/emulator/dialects/index.js';

export interface Peer {
  readonly dialect: DialectName;
  readonly req?: IncomingMessage;
  /** Call/stream identity from the provider's first frames. */
  ids: Record<string, string>;
  /** The caller's audio as the bridge decoded it. */
  readonly heard: Int16Array[];
  /** Every control message from the provider (parsed JSON, or the text as is). */
  readonly control: unknown[];
  /** Acknowledged marks, in order. */
  readonly acks: string[];
  sendText(text: string): void;
  sendBinary(bytes: Uint8Array): void;
  close(): void;
  closeCode?: number;
}

export interface FakeBridge {
  readonly url: string;
  readonly peers: Peer[];
  close(): Promise<void>;
}

export type Script = (peer: Peer) => void;

/** Rate, codec and frame bytes the conforming fake answers with. */
export function wireOf(dialect: DialectName, rate: number): { codec: 'pcmu' | 'slin'; rate: number } {
  if (dialect === 'twilio' || dialect === 'telnyx' || dialect === 'plivo' || dialect === 'asterisk')
    return { codec: 'pcmu', rate: 8000 };
  return { codec: 'slin', rate };
}

export function encode(codec: 'pcmu' | 'slin', pcm: Int16Array): Uint8Array {
  const out = new Uint8Array(codec === 'slin' ? pcm.length * 2 : pcm.length);
  encodeInto(codec, pcm, out);
  return out;
}

function decode(codec: 'pcmu' | 'slin', bytes: Uint8Array): Int16Array {
  const out = new Int16Array(codec === 'slin' ? bytes.byteLength >> 1 : bytes.byteLength);
  decodeInto(codec, codec === 'slin' ? bytes.subarray(0, out.length * 2) : bytes, out);
  return out;
}

/** One media message of the reply in the dialect (a mark after it via `markMessage`). */
export function mediaMessage(peer: Peer, bytes: Uint8Array): string | Uint8Array {
  const b64 = toBase64(bytes);
  switch (peer.dialect) {
    case 'twilio':
      return JSON.stringify({ event: 'media', streamSid: peer.ids.stream, media: { payload: b64 } });
    case 'telnyx':
      return JSON.stringify({ event: 'media', media: { payload: b64 } });
    case 'exotel':
      return JSON.stringify({ event: 'media', stream_sid: peer.ids.stream, media: { payload: b64 } });
    case 'plivo':
      return JSON.stringify({
        event: 'playAudio',
        media: { contentType: 'audio/x-mulaw', sampleRate: 8000, payload: b64 },
      });
    default:
      return bytes;
  }
}

export function markMessage(peer: Peer, name: string): string {
  switch (peer.dialect) {
    case 'twilio':
      return JSON.stringify({ event: 'mark', streamSid: peer.ids.stream, mark: { name } });
    case 'telnyx':
      return JSON.stringify({ event: 'mark', mark: { name } });
    case 'exotel':
      return JSON.stringify({ event: 'mark', stream_sid: peer.ids.stream, mark: { name } });
    case 'plivo':
      return JSON.stringify({ event: 'checkpoint', streamId: peer.ids.stream, name });
    case 'vonage':
      return JSON.stringify({ action: 'notify', payload: { name } });
    case 'jambonz':
      return JSON.stringify({ type: 'mark', data: { name } });
    case 'asterisk':
      return `MARK_MEDIA ${name}`;
    default:
      return JSON.stringify({ event: 'mark', name });
  }
}

/** Chunk the conforming fake sends: 20 ms, except Exotel's 3.2 KB floor (200 ms at 8 kHz, 100 ms at 16). */
export function replyChunkMs(dialect: DialectName, rate: number): number {
  if (dialect === 'exotel') return Math.max(100, Math.ceil(3200 / (rate / 500) / 20) * 20);
  return 20;
}

/** Sends `pcm` in `chunkMs` pieces on a drift-free schedule; resolves after the last. */
export function pace(
  peer: Peer,
  codec: 'pcmu' | 'slin',
  rate: number,
  pcm: Int16Array,
  chunkMs: number,
): Promise<void> {
  const per = (rate * chunkMs) / 1000;
  const total = Math.ceil(pcm.length / per);
  const t0 = performance.now();
  return new Promise((resolve) => {
    let k = 0;
    const tick = () => {
      while (k < total && t0 + k * chunkMs <= performance.now() + 0.5) {
        const msg = mediaMessage(peer, encode(codec, pcm.subarray(k * per, (k + 1) * per)));
        if (typeof msg === 'string') peer.sendText(msg);
        else peer.sendBinary(msg);
        k++;
      }
      if (k >= total) resolve();
      else setTimeout(tick, Math.max(0, t0 + k * chunkMs - performance.now()));
    };
    tick();
  });
}

/** The conforming fake: on the caller's first audio, a paced reply tone, then a mark. */
export function conforming(replyHz: number, seconds: number, rate: number): Script {
  return (peer) => {
    let started = false;
    const onAudio = () => {
      if (started) return;
      started = true;
      const w = wireOf(peer.dialect, rate);
      const tone = generateTone(replyHz, w.rate, Math.round(w.rate * seconds), 0.5);
      void pace(peer, w.codec, w.rate, tone, replyChunkMs(peer.dialect, w.rate)).then(() => {
        if (peer.dialect !== 'audiosocket') peer.sendText(markMessage(peer, 'reply-done'));
      });
    };
    (peer as { onAudio?: () => void }).onAudio = onAudio;
  };
}

/** Reads the provider's frames in its dialect into `peer`. */
function readProvider(
  peer: Peer & { onAudio?: () => void },
  rate: number,
  data: Buffer,
  isBinary: boolean,
): void {
  const w = wireOf(peer.dialect, rate);
  const audio = (bytes: Uint8Array) => {
    peer.heard.push(decode(w.codec, bytes));
    peer.onAudio?.();
  };
  if (isBinary) {
    audio(data);
    return;
  }
  const text = data.toString('utf8');
  let msg: Record<string, unknown>;
  try {
    msg = JSON.parse(text) as Record<string, unknown>;
  } catch {
    peer.control.push(text);
    const [event, ...rest] = text.split(' ');
    if (event === 'MEDIA_MARK_PROCESSED') peer.acks.push(rest.join(' ').replace('correlation_id:', ''));
    return;
  }
  peer.control.push(msg);
  const o = (v: unknown) => (v ?? {}) as Record<string, unknown>;
  switch (msg.event ?? msg.type) {
    case 'start':
      peer.ids.stream = String(msg.streamSid ?? msg.stream_id ?? msg.stream_sid ?? o(msg.start).streamId);
      return;
    case 'media':
      if (typeof o(msg.media).payload === 'string') audio(fromBase64(o(msg.media).payload as string));
      else if (typeof msg.payload === 'string') audio(fromBase64(msg.payload));
      return;
    case 'mark':
      peer.acks.push(String(o(msg.mark).name ?? o(msg.data).name ?? msg.name));
      return;
    case 'playedStream':
      peer.acks.push(String(msg.name));
      return;
    case 'websocket:notify':
      peer.acks.push(String(o(msg.payload).name));
      return;
  }
}

export async function startFake(
  dialect: DialectName,
  rate: number,
  script: Script,
  protocol?: string,
): Promise<FakeBridge> {
  const peers: Peer[] = [];
  if (dialect === 'audiosocket') {
    const sockets = new Set<Socket>();
    const server = createTcpServer((socket) => {
      sockets.add(socket);
      const parser = new AudioSocketParser();
      const peer: Peer & { onAudio?: () => void } = {
        dialect,
        ids: {},
        heard: [],
        control: [],
        acks: [],
        sendText: () => {},
        sendBinary: (bytes) => {
          if (!socket.destroyed) socket.write(audioSocketFrame(AUDIOSOCKET_RATE_TYPES[rate]!, bytes));
        },
        close: () => socket.end(audioSocketFrame(0)),
      };
      peers.push(peer);
      script(peer);
      socket.on('data', (chunk: Buffer) =>
        parser.push(chunk, (type, payload) => {
          if (type === 0x01) peer.ids.uuid = payload.toString('hex');
          else if (type === AUDIOSOCKET_RATE_TYPES[rate]) {
            peer.heard.push(decode('slin', payload));
            peer.onAudio?.();
          } else peer.control.push({ type, payload: payload.toString('latin1') });
        }),
      );
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    return {
      url: `tcp://127.0.0.1:${port}`,
      peers,
      close: () =>
        new Promise<void>((r) => {
          for (const s of sockets) s.destroy();
          server.close(() => r());
        }),
    };
  }
  const server: Server = createServer();
  const wss = new WebSocketServer({
    server,
    handleProtocols: (protocols) =>
      protocol ?? (protocols.has('audio.jambonz.org') ? 'audio.jambonz.org' : false),
  });
  wss.on('connection', (ws: WebSocket, req) => {
    const peer: Peer & { onAudio?: () => void } = {
      dialect,
      req,
      ids: {},
      heard: [],
      control: [],
      acks: [],
      sendText: (t) => {
        if (ws.readyState === WebSocket.OPEN) ws.send(t);
      },
      sendBinary: (b) => {
        if (ws.readyState === WebSocket.OPEN) ws.send(b);
      },
      close: () => ws.close(1000),
    };
    peers.push(peer);
    ws.on('close', (code) => {
      peer.closeCode = code;
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => readProvider(peer, rate, data, isBinary));
    script(peer);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}/v1/media/${dialect}`,
    peers,
    close: () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close();
        server.close(() => r());
      }),
  };
}

/** A script that runs `fn` once, on the caller's first audio. */
export function onFirstAudio(fn: (peer: Peer) => void): Script {
  return (peer) => {
    let done = false;
    (peer as { onAudio?: () => void }).onAudio = () => {
      if (done) return;
      done = true;
      fn(peer);
    };
  };
}

/**
 * An echo bridge: the caller's audio straight back in the dialect's framing, 20 ms a message (Exotel:
 * gathered to its 3.2 KB floor). It answers as fast as the caller sends, so it is paced by the caller.
 */
export function echo(rate: number): Script {
  return (peer) => {
    const w = wireOf(peer.dialect, rate);
    const frame = (w.rate / 50) * (peer.dialect === 'exotel' ? Math.ceil(3200 / ((w.rate / 50) * 2)) : 1);
    let pending = new Int16Array(0);
    (peer as { onAudio?: () => void }).onAudio = () => {
      const got = peer.heard.splice(0);
      const all = new Int16Array(pending.length + got.reduce((s, c) => s + c.length, 0));
      all.set(pending);
      let at = pending.length;
      for (const c of got) {
        all.set(c, at);
        at += c.length;
      }
      let i = 0;
      for (; i + frame <= all.length; i += frame) {
        const msg = mediaMessage(peer, encode(w.codec, all.subarray(i, i + frame)));
        if (typeof msg === 'string') peer.sendText(msg);
        else peer.sendBinary(msg);
      }
      pending = all.slice(i);
    };
  };
}
