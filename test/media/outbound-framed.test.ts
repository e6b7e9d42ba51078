/**
 * The outbound writer on a real `ws` server socket, where it frames audio messages in place
 * (src/media/transport.ts `framedMessages`): binary chunks, and base64 media events whose text around the
 * payload the dialect gives (`audioTextAround`). The client stops reading while thousands of chunks are
 * sent, so the socket keeps frames it has not written yet: every chunk must still arrive as it was,
 * which holds only if a frame the socket kept is never written into again. A dialect text that is not
 * printable ASCII goes through `ws.send` instead.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { resolveFormat, type SessionFormat } from '../../src/media/format.js';
import { type OutboundWire, OutboundWriter } from '../../src/media/outbound.js';
import { DefaultWire } from '../../src/media/providers/default.js';
import { createMetrics } from '../../src/metrics.js';
import { waitFor } from '../helpers/wait.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function pair(): Promise<{
  server: WebSocket;
  client: WebSocket;
  received: { text: boolean; data: Buffer }[];
}> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
  await once(wss, 'listening');
  const accepted = once(wss, 'connection');
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  const received: { text: boolean; data: Buffer }[] = [];
  client.on('message', (data: Buffer, binary: boolean) => received.push({ text: !binary, data }));
  await once(client, 'open');
  const [server] = (await accepted) as [WebSocket];
  cleanups.push(async () => {
    client.terminate();
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  });
  return { server, client, received };
}

/** Chunk `k`: bytes that differ from every other chunk's. */
function chunk(bytes: number, k: number): Buffer {
  const b = Buffer.alloc(bytes);
  b.writeUInt32LE(k, 0);
  for (let i = 4; i < bytes; i++) b[i] = (i * 31 + k * 7) & 0xff;
  return b;
}

/**
 * A writer on `server` that sheds nothing, on a clock the test moves (`push` sends each chunk at once;
 * nothing is left for a loop to do, so it never wakes one).
 */
function queueOn(server: WebSocket, format: SessionFormat, wire?: OutboundWire) {
  const clock = { ms: 0 };
  const q = new OutboundWriter(server, {
    format,
    leadMs: 0,
    bufferMs: 60_000,
    highWaterBytes: 1 << 30,
    metrics: createMetrics(),
    loop: { now: () => clock.ms, wakeBy: () => {} },
    ...(wire !== undefined && { wire }),
  });
  /** Chunk `k` into the queue, then the clock one chunk on. */
  return (k: number): void => {
    q.push(chunk(format.chunkBytes, k));
    clock.ms += format.chunkMs;
  };
}

/**
 * Sends chunks through a queue on `server` with the client not reading, until the socket holds back
 * over 1 MB, then 200 more; returns how many were sent.
 */
function sendHeldBack(
  server: WebSocket,
  client: WebSocket,
  format: SessionFormat,
  wire?: OutboundWire,
): number {
  const send = queueOn(server, format, wire);
  (client as unknown as { _socket: { pause(): void } })._socket.pause();
  let k = 0;
  let after = -1;
  while (k < 200_000 && after !== 0) {
    send(k++);
    if (after < 0 && server.bufferedAmount > 1_000_000) after = 200;
    else if (after > 0) after--;
  }
  expect(after, 'the socket held chunks back').toBe(0);
  (client as unknown as { _socket: { resume(): void } })._socket.resume();
  return k;
}

describe('outbound audio framed in place on a ws socket', () => {
  it('binary: every chunk arrives as it was while the socket holds frames back', async () => {
    const { server, client, received } = await pair();
    const format = resolveFormat({ codec: 'slin', sample_rate: 8000 }, undefined);
    const n = sendHeldBack(server, client, format);
    await waitFor(() => received.length === n, 30_000, `${n} chunks at the client`);
    for (let k = 0; k < n; k++) {
      expect(received[k]!.text).toBe(false);
      if (!received[k]!.data.equals(chunk(320, k))) expect.fail(`chunk ${k} arrived changed`);
    }
  });

  it('base64 media events: every chunk arrives as it was while the socket holds frames back', async () => {
    const { server, client, received } = await pair();
    const format = resolveFormat({ codec: 'slin', sample_rate: 8000, encoding: 'base64' }, undefined);
    const n = sendHeldBack(server, client, format, DefaultWire.of(format));
    await waitFor(() => received.length === n, 30_000, `${n} chunks at the client`);
    for (let k = 0; k < n; k++) {
      expect(received[k]!.text).toBe(true);
      const ev = JSON.parse(received[k]!.data.toString('utf8')) as { event: string; payload: string };
      if (ev.event !== 'media' || !Buffer.from(ev.payload, 'base64').equals(chunk(320, k)))
        expect.fail(`chunk ${k} arrived changed: ${received[k]!.data.toString('utf8').slice(0, 80)}`);
    }
  });

  it('a dialect text that is not printable ASCII goes as the dialect writes it, through ws', async () => {
    const { server, received } = await pair();
    const format = resolveFormat({ codec: 'slin', sample_rate: 8000, encoding: 'base64' }, undefined);
    const around = { head: '{"event":"media","stream":"café","payload":"', tail: '"}' };
    const base = DefaultWire.of(format);
    const wire: OutboundWire = {
      textAudio: true,
      audioText: (c) => `${around.head}${c.toString('base64')}${around.tail}`,
      audioTextAround: () => around,
      markFrame: (name) => base.markFrame(name),
      clearFrame: () => base.clearFrame(),
      dtmfFrame: (d) => base.dtmfFrame(d),
      errorFrame: (e) => base.errorFrame(e),
      hangupFrame: (r) => base.hangupFrame(r),
    };
    const send = queueOn(server, format, wire);
    for (let k = 0; k < 5; k++) send(k);
    await waitFor(() => received.length === 5, 5_000, '5 chunks at the client');
    for (let k = 0; k < 5; k++) {
      const ev = JSON.parse(received[k]!.data.toString('utf8')) as { stream: string; payload: string };
      expect(ev.stream).toBe('café');
      expect(Buffer.from(ev.payload, 'base64').equals(chunk(320, k))).toBe(true);
    }
  });
});
