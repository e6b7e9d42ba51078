/**
 * Audio frames written whole (src/media/transport.ts `framedMessages`): what a real `ws` client reads
 * from them, binary and text, in order with the messages `ws.send` sends on the same socket, at each of
 * RFC 6455's three length encodings; and where the framing is refused (the caller then sends through
 * `ws`).
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { framedMessages } from '../../src/media/transport.js';
import { waitFor } from '../helpers/wait.js';

interface Pair {
  server: WebSocket;
  client: WebSocket;
  received: { binary: boolean; data: Buffer }[];
  close(): Promise<void>;
}

const open: Pair[] = [];

async function pair(deflate = false): Promise<Pair> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: deflate });
  await once(wss, 'listening');
  const port = (wss.address() as AddressInfo).port;
  const accepted = once(wss, 'connection');
  const client = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: deflate });
  const received: Pair['received'] = [];
  client.on('message', (data: Buffer, binary: boolean) => received.push({ binary, data }));
  await once(client, 'open');
  const [server] = (await accepted) as [WebSocket];
  const p: Pair = {
    server,
    client,
    received,
    async close() {
      client.terminate();
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((r) => wss.close(() => r()));
    },
  };
  open.push(p);
  return p;
}

afterEach(async () => {
  for (const p of open.splice(0)) await p.close();
});

/** `n` bytes that differ from one message to the next. */
function payload(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 7) & 0xff;
  return b;
}

describe('audio frames written whole', () => {
  for (const [size, headerBytes] of [
    [125, 2],
    [126, 4],
    [320, 4],
    [65_535, 4],
    [65_536, 10],
    [70_000, 10],
  ] as const) {
    it(`a ${size}-byte payload: a ${headerBytes}-byte header, read by ws as sent, in order with ws.send`, async () => {
      const { server, received } = await pair();
      const framed = framedMessages(server, size, 'binary');
      expect(framed?.headerBytes).toBe(headerBytes);
      const sent: { binary: boolean; data: Buffer }[] = [];
      for (let k = 0; k < 6; k++) {
        const frame = framed!.frame();
        expect(frame.length).toBe(headerBytes + size);
        const audio = payload(size, k);
        audio.copy(frame, headerBytes);
        framed!.send(frame);
        sent.push({ binary: true, data: audio });
        // A text message between the frames (a mark), through ws itself.
        const text = JSON.stringify({ event: 'mark', name: `m${k}` });
        server.send(text);
        sent.push({ binary: false, data: Buffer.from(text) });
      }
      await waitFor(() => received.length === sent.length, 5_000, 'every message at the client');
      expect(received.map((m) => m.binary)).toEqual(sent.map((m) => m.binary));
      for (let i = 0; i < sent.length; i++) expect(received[i]!.data.equals(sent[i]!.data)).toBe(true);
    });
  }

  it('text frames: a media event per chunk, base64 written into the same buffer, read by ws as text', async () => {
    const { server, received } = await pair();
    const head = '{"event":"media","payload":"';
    const tail = '"}';
    const b64 = 4 * Math.ceil(320 / 3);
    const framed = framedMessages(server, head.length + b64 + tail.length, 'text')!;
    const frame = framed.frame();
    frame.write(head, framed.headerBytes, 'latin1');
    frame.write(tail, framed.headerBytes + head.length + b64, 'latin1');
    for (let k = 0; k < 20; k++) {
      frame.write(payload(320, k).toString('base64'), framed.headerBytes + head.length, 'latin1');
      framed.send(frame);
      server.send(JSON.stringify({ event: 'mark', name: `m${k}` }));
    }
    await waitFor(() => received.length === 40, 5_000, '40 messages at the client');
    for (let k = 0; k < 20; k++) {
      const media = received[2 * k]!;
      expect(media.binary).toBe(false);
      const event = JSON.parse(media.data.toString('utf8')) as { event: string; payload: string };
      expect(event.event).toBe('media');
      expect(Buffer.from(event.payload, 'base64').equals(payload(320, k))).toBe(true);
      expect(JSON.parse(received[2 * k + 1]!.data.toString('utf8'))).toEqual({
        event: 'mark',
        name: `m${k}`,
      });
    }
  });

  it('one frame buffer reused for message after message carries each payload', async () => {
    const { server, received } = await pair();
    const framed = framedMessages(server, 320, 'binary')!;
    let frame = framed.frame();
    for (let k = 0; k < 50; k++) {
      payload(320, k).copy(frame, framed.headerBytes);
      framed.send(frame);
      // The outbound writer's rule: a frame the socket kept is not written into again.
      if (server.bufferedAmount > 0) frame = framed.frame();
    }
    await waitFor(() => received.length === 50, 5_000, '50 messages at the client');
    for (let k = 0; k < 50; k++) expect(received[k]!.data.equals(payload(320, k))).toBe(true);
  });

  it('sends nothing once the socket is closing: the close frame is the last thing written', async () => {
    const { server, client, received } = await pair();
    const framed = framedMessages(server, 320, 'binary')!;
    const errors: Error[] = [];
    client.on('error', (err) => errors.push(err));
    const closed = once(client, 'close');
    const socket = (server as unknown as { _socket: { bytesWritten: number } })._socket;
    server.close(1000, 'done');
    // The close frame is written; a ws client would ignore bytes after it, so count what went out.
    const afterClose = socket.bytesWritten;
    expect(afterClose).toBeGreaterThan(0);
    framed.send(framed.frame());
    expect(socket.bytesWritten).toBe(afterClose);
    const [code] = (await closed) as [number];
    expect(code).toBe(1000);
    expect(received).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('is refused on a client socket (its frames must be masked)', async () => {
    const { client } = await pair();
    expect(framedMessages(client, 320, 'binary')).toBeUndefined();
  });

  it('is refused where an extension was negotiated (permessage-deflate owns the frame bits)', async () => {
    const { server } = await pair(true);
    expect(server.extensions).not.toBe('');
    expect(framedMessages(server, 320, 'binary')).toBeUndefined();
  });

  it('is refused on a socket that is not a ws WebSocket, and for an empty payload', async () => {
    const { server } = await pair();
    const tcpLike = {
      readyState: 1,
      bufferedAmount: 0,
      send() {},
      close() {},
      terminate() {},
      ping() {},
      on() {
        return this;
      },
    };
    expect(framedMessages(tcpLike, 320, 'binary')).toBeUndefined();
    expect(framedMessages(server, 0, 'binary')).toBeUndefined();
  });
});
