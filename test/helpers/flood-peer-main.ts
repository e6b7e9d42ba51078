/**
 * A provider that floods the bridge, in a process of its own: forked by FloodPeer (flood-peer.ts), told
 * what to do over IPC. One WebSocket to the bridge's media endpoint and a session_start; then, on the
 * paced caller's drift-free schedule, every tick one chunk of real audio (base64 media events) and `bad`
 * bad text frames (an unknown event each). It can stop reading (its TCP socket paused) and read again,
 * and says what it sent and received.
 *
 * Apart from the test process so that what the test measures there (a control call's gaps) is the
 * bridge's doing and not this peer's: sending thousands of frames a second takes a core of its own.
 */
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { PacedSchedule } from '../../src/emulator/paced-caller.js';
import { tonePcm16 } from './audio.js';
import type { FloodPeerReport, FloodPeerRequest } from './flood-peer.js';

const BAD = JSON.stringify({ event: `x${'y'.repeat(60)}` });

let ws: WebSocket | undefined;
let schedule: PacedSchedule | undefined;
let chunkBytes = 640;
let second: Buffer = Buffer.alloc(0);
const state: { -readonly [K in keyof Omit<FloodPeerReport, 'type' | 'id' | 'failed'>]: FloodPeerReport[K] } =
  {
    ticks: 0,
    bad: 0,
    audio: 0,
    errors: {},
    closeCode: undefined,
    closeReason: '',
  };

function reply(id: number, extra: Record<string, unknown> = {}): void {
  process.send?.({ type: 'report', id, ...state, ...extra } satisfies FloodPeerReport);
}

function socket(): Socket {
  return (ws as unknown as { _socket: Socket })._socket;
}

async function open(r: Extract<FloodPeerRequest, { type: 'open' }>): Promise<void> {
  const rate = r.sampleRate;
  chunkBytes = (rate / 50) * 2;
  second = tonePcm16(500, rate, rate);
  ws = new WebSocket(r.url, { headers: { authorization: `Bearer ${r.token}` } });
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) {
      state.audio++;
      return;
    }
    const ev = JSON.parse(data.toString('utf8')) as { event: string; code?: string };
    if (ev.event === 'media') state.audio++;
    else if (ev.event === 'error') state.errors[ev.code ?? ''] = (state.errors[ev.code ?? ''] ?? 0) + 1;
  });
  ws.on('close', (code: number, reason: Buffer) => {
    state.closeCode = code;
    state.closeReason = reason.toString();
    schedule?.stop();
  });
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    ws!.once('open', () => resolve());
    ws!.once('error', reject);
  });
  ws.send(
    JSON.stringify({
      event: 'session_start',
      session_id: r.sessionId,
      customer_phone: '+15550100',
      direction: 'inbound',
      media: { codec: 'slin', sample_rate: rate, encoding: 'base64', chunk_bytes: chunkBytes },
    }),
  );
}

function flood(r: Extract<FloodPeerRequest, { type: 'flood' }>): void {
  const perSecond = second.length / chunkBytes;
  schedule = new PacedSchedule({
    chunkMs: r.tickMs,
    chunks: r.maxTicks,
    send: (i) => {
      if (ws?.readyState !== WebSocket.OPEN) return;
      const k = i % perSecond;
      ws.send(
        JSON.stringify({
          event: 'media',
          payload: second.subarray(k * chunkBytes, (k + 1) * chunkBytes).toString('base64'),
        }),
      );
      for (let f = 0; f < r.bad; f++) ws.send(BAD);
      state.ticks++;
      state.bad += r.bad;
    },
  });
  schedule.start();
  schedule.done.catch((err: unknown) => console.error('flood schedule failed', err));
}

process.on('message', (r: FloodPeerRequest) => {
  switch (r.type) {
    case 'open':
      open(r).then(
        () => reply(r.id),
        (err: unknown) => reply(r.id, { failed: String(err) }),
      );
      return;
    case 'flood':
      flood(r);
      reply(r.id);
      return;
    case 'stop':
      schedule?.stop();
      reply(r.id);
      return;
    case 'pause':
      socket().pause();
      reply(r.id);
      return;
    case 'resume':
      socket().resume();
      reply(r.id);
      return;
    case 'report':
      reply(r.id);
      return;
    case 'exit':
      schedule?.stop();
      ws?.terminate();
      process.exit(0);
  }
});
