/**
 * A bare `ws` echo server: every frame back as it came. It gives the transport's own limit on this
 * machine, to set beside the bridge's in the same run. `/metrics` reports its CPU and RSS in the
 * bridge's Prometheus names so the load generator reads both the same way.
 *
 * With `delayMs`, every frame goes back that much later, released by the bridge's own pacing loop
 * (src/media/pacing-loop.ts, one timer, wake-ups at least 2 ms apart as with the bridge's default
 * PACE_MIN_GAP_MS): the bare transport doing what the bridge's `builtin:echo` bot does with its delay
 * line, so the bridge's figures can be set beside an echo that holds audio the same way
 * (bench/README.md).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { type WebSocket, WebSocketServer } from 'ws';
import { type Paced, PacingLoop } from '../media/pacing-loop.js';

export interface EchoServer {
  readonly url: string;
  close(): Promise<void>;
}

export interface EchoOptions {
  /** How long each frame is held before it goes back, ms (0: at once). */
  readonly delayMs?: number;
}

/** The bridge's default PACE_MIN_GAP_MS. */
const MIN_GAP_MS = 2;
/** The most bytes the delay line holds; frames beyond it are dropped (and so counted lost). */
const MAX_HELD_BYTES = 64 * 2 ** 20;

export function processMetricsText(): string {
  const cpu = process.cpuUsage();
  return (
    `process_cpu_seconds_total ${(cpu.user + cpu.system) / 1e6}\n` +
    `process_resident_memory_bytes ${process.memoryUsage.rss()}\n`
  );
}

interface Held {
  readonly ws: WebSocket;
  readonly data: Buffer;
  readonly binary: boolean;
  readonly due: number;
}

/** Frames of every connection in arrival order: one delay for all, so due times never decrease. */
class DelayLine implements Paced {
  readonly #loop = new PacingLoop(MIN_GAP_MS);
  readonly #delayMs: number;
  #held: Held[] = [];
  #head = 0;
  #bytes = 0;
  #stopped = false;

  constructor(delayMs: number) {
    this.#delayMs = delayMs;
    this.#loop.add(this);
  }

  hold(ws: WebSocket, data: Buffer, binary: boolean): void {
    if (this.#stopped || this.#bytes + data.length > MAX_HELD_BYTES) return;
    // A message may be a view into a larger socket read: the copy holds only its own bytes.
    const due = performance.now() + this.#delayMs;
    this.#held.push({ ws, data: Buffer.from(data), binary, due });
    this.#bytes += data.length;
    this.#loop.wakeBy(this, due);
  }

  service(now: number): number {
    const held = this.#held;
    while (this.#head < held.length && held[this.#head]!.due <= now) {
      const h = held[this.#head++]!;
      this.#bytes -= h.data.length;
      if (h.ws.readyState === h.ws.OPEN) h.ws.send(h.data, { binary: h.binary });
    }
    if (this.#head === held.length) {
      // All sent: let go of the frames and their sockets at once.
      this.#held = [];
      this.#head = 0;
    } else if (this.#head > 4096 && this.#head * 2 > held.length) {
      this.#held = held.slice(this.#head);
      this.#head = 0;
    }
    return this.#head < this.#held.length ? this.#held[this.#head]!.due : Number.POSITIVE_INFINITY;
  }

  stop(): void {
    this.#stopped = true;
    this.#loop.stop();
    this.#held = [];
    this.#head = 0;
    this.#bytes = 0;
  }
}

export async function startEchoServer(
  port = 0,
  host = '127.0.0.1',
  options: EchoOptions = {},
): Promise<EchoServer> {
  const delayMs = options.delayMs ?? 0;
  if (!(Number.isInteger(delayMs) && delayMs >= 0 && delayMs <= 10_000))
    throw new RangeError(`delayMs must be a whole number of ms from 0 to 10000, got ${delayMs}`);
  const server: Server = createServer((req, res) => {
    if (req.url === '/metrics') res.end(processMetricsText());
    else res.writeHead(404).end();
  });
  const wss = new WebSocketServer({ server, maxPayload: 64 * 1024, perMessageDeflate: false });
  const line = delayMs > 0 ? new DelayLine(delayMs) : undefined;
  wss.on('connection', (ws) => {
    if (line === undefined) ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
    else ws.on('message', (data, isBinary) => line.hold(ws, asBuffer(data), isBinary));
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const addr = server.address() as AddressInfo;
  return {
    url: `ws://${host}:${addr.port}/v1/media`,
    async close() {
      line?.stop();
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** ws's default binaryType gives a Buffer; the other shapes only if a caller changes it. */
function asBuffer(data: Buffer | ArrayBuffer | Buffer[]): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
