/**
 * The AudioSocket listener: a TCP server on AUDIOSOCKET_HOST:AUDIOSOCKET_PORT (started only when the
 * port is set) that Asterisk connects to, one connection per call. AudioSocket has no credentials, so a
 * connection is taken only from an address in AUDIOSOCKET_ALLOW (empty: every one refused and logged);
 * then the same admission caps as the media endpoint (per-address attempts, MAX_SESSIONS), and each
 * connection becomes a ProviderConnection over `AudioSocketStream`, the TCP transport below, with the
 * `audiosocket` wire. Its calls belong to AUDIOSOCKET_TENANT. Close drains like the media endpoint.
 */
import { EventEmitter } from 'node:events';
import { createServer, type Socket } from 'node:net';
import proxyAddr from '@fastify/proxy-addr';
import type { BridgeContext } from '../context.js';
import { Admission } from '../limits/admission.js';
import type { Logger } from '../log.js';
import type { AudioPipeline } from '../pipeline/types.js';
import type { BotNotice } from './bot/types.js';
import { ProviderConnection } from './connection.js';
import { PacingLoop } from './pacing-loop.js';
import { audioSocketDialect, isAudioSocketType } from './providers/audiosocket.js';
import type { ProviderSocket } from './transport.js';

export interface AudioSocketListener {
  /** Connections open now (calls, and connections before their first audio). */
  readonly connections: number;
  /** Listens; resolves to `tcp://host:port`. */
  listen(): Promise<string>;
  /** Hands `event` to the bot of a live AudioSocket call this instance holds; false when none. */
  notify(tenant: string, sessionId: string, event: BotNotice): boolean;
  /** Stops taking connections, lets live calls run up to `drainTimeoutMs`, then ends them. */
  close(): Promise<void>;
}

export interface AudioSocketListenerOptions {
  readonly port: number;
  readonly host: string;
  readonly tenant: string;
  /** Addresses and CIDR ranges (proxy-addr's forms) connections are taken from. */
  readonly allow: readonly string[];
  /** The media endpoint's open connections: MAX_SESSIONS caps both together. */
  readonly others?: () => number;
}

export function createAudioSocketListener(
  ctx: BridgeContext,
  pipeline: AudioPipeline,
  o: AudioSocketListenerOptions,
): AudioSocketListener {
  const { config, log } = ctx;
  const allowed = o.allow.length === 0 ? () => false : proxyAddr.compile([...o.allow]);
  const loop = new PacingLoop(config.paceMinGapMs, ctx.clock);
  const conns = new Set<ProviderConnection>();
  const sockets = new Set<Socket>();
  const admission = new Admission({
    maxSessions: config.maxSessions,
    connectPerSec: config.mediaConnectPerSec,
    registry: ctx.metrics.registry,
  });
  const heartbeat = setInterval(() => {
    for (const c of conns) c.heartbeat();
  }, config.heartbeatIntervalMs);
  heartbeat.unref();

  const server = createServer({ noDelay: true, keepAlive: true, keepAliveInitialDelay: 10_000 });
  server.on('connection', (socket) => {
    socket.on('error', noop);
    const remote = socket.remoteAddress ?? 'unknown';
    if (!allowed(remote, 0)) {
      log.warn(
        { remote, dialect: 'audiosocket' },
        o.allow.length === 0
          ? 'audiosocket connection refused: AUDIOSOCKET_ALLOW is empty, so no address may connect'
          : 'audiosocket connection refused: the address is not in AUDIOSOCKET_ALLOW',
      );
      socket.destroy();
      return;
    }
    const refusal = ctx.draining
      ? { code: 'not_ready' }
      : admission.checkAddress(remote, conns.size + (o.others?.() ?? 0));
    if (refusal !== undefined) {
      log.warn({ code: refusal.code, remote, dialect: 'audiosocket' }, 'audiosocket connection refused');
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    const stream = new AudioSocketStream(socket, log);
    const conn = new ProviderConnection(
      stream,
      { tenant: o.tenant, exp: undefined },
      { ctx, dialect: audioSocketDialect, pipeline, loop, forget: (c) => conns.delete(c) },
    );
    conns.add(conn);
  });

  return {
    get connections() {
      return conns.size;
    },
    listen() {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(o.port, o.host, () => {
          server.removeListener('error', reject);
          const addr = server.address();
          if (addr === null || typeof addr === 'string') return resolve(String(addr));
          const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
          resolve(`tcp://${host}:${addr.port}`);
        });
      });
    },
    notify(tenant, sessionId, event) {
      for (const c of conns) {
        const s = c.session;
        if (s !== undefined && !s.ended && s.info.session_id === sessionId && s.info.tenant === tenant) {
          s.notify(event);
          return true;
        }
      }
      return false;
    },
    async close() {
      // No new connections; the live ones stay until they end or the drain bound passes.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const deadline = Date.now() + config.drainTimeoutMs;
      if (conns.size > 0)
        log.info({ calls: conns.size, drainTimeoutMs: config.drainTimeoutMs }, 'draining audiosocket calls');
      while (conns.size > 0 && Date.now() < deadline) await sleep(Math.min(50, deadline - Date.now()));
      for (const c of conns) c.shutdown();
      const cut = Date.now() + 1_000;
      while (conns.size > 0 && Date.now() < cut) await sleep(20);
      for (const c of conns) c.terminate();
      conns.clear();
      for (const s of sockets) s.destroy();
      clearInterval(heartbeat);
      loop.stop();
      await closed;
    },
  };
}

/** How long a socket the bridge closed may wait for the peer's side of the close before it is cut. */
const CLOSE_WAIT_MS = 2_000;

/**
 * A TCP connection as a ProviderSocket: the byte stream split into AudioSocket messages, each handed
 * on whole (header included) as a binary message. TCP has no message boundary to resynchronise on, so
 * a type byte the protocol does not have means the stream is out of step (a length that lied): the
 * connection is cut and its call ends, the other calls untouched. A message cut short by the close is
 * dropped. There is no ping in AudioSocket: a ping is answered when anything came since the previous one
 * (Asterisk sends audio every 20 ms of a call), so a peer silent for a whole heartbeat period is ended;
 * TCP keep-alive (set on the server) covers a peer whose host vanished.
 */
export class AudioSocketStream extends EventEmitter implements ProviderSocket {
  readonly #socket: Socket;
  readonly #log: Logger;
  #state = 1;
  /** Cut by the bridge (out of step, or terminated): the close is not the peer's clean one. */
  #cut = false;
  /** Bytes came since the last ping (the liveness check). */
  #heard = true;
  #pending: Buffer = Buffer.alloc(0);

  constructor(socket: Socket, log: Logger) {
    super();
    this.#socket = socket;
    this.#log = log;
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', (err) => this.emit('error', err));
    socket.on('close', (hadError) => {
      this.#state = 3;
      this.#pending = Buffer.alloc(0);
      this.emit('close', hadError || this.#cut ? 1006 : 1000);
    });
  }

  get readyState(): number {
    return this.#state;
  }

  get bufferedAmount(): number {
    return this.#socket.writableLength;
  }

  send(data: Buffer | string): void {
    if (this.#state === 1) this.#socket.write(data);
  }

  close(): void {
    if (this.#state !== 1) return;
    this.#state = 2;
    this.#socket.end();
    setTimeout(() => this.#socket.destroy(), CLOSE_WAIT_MS).unref();
  }

  terminate(): void {
    this.#cut = true;
    this.#state = 3;
    this.#socket.destroy();
  }

  /** Answered when anything came since the previous ping: Asterisk sends audio every 20 ms of a call. */
  ping(): void {
    if (this.#state !== 1 || !this.#heard) return;
    this.#heard = false;
    queueMicrotask(() => this.emit('pong'));
  }

  #onData(chunk: Buffer): void {
    if (this.#state !== 1) return;
    this.#heard = true;
    let buf = this.#pending.byteLength === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    while (buf.byteLength >= 3) {
      const type = buf[0]!;
      if (!isAudioSocketType(type)) {
        this.#log.warn(
          { remote: this.#socket.remoteAddress, type: `0x${type.toString(16)}` },
          'audiosocket stream out of step (a message type the protocol does not have); connection cut',
        );
        this.terminate();
        return;
      }
      const end = 3 + buf.readUInt16BE(1);
      if (buf.byteLength < end) break;
      this.emit('message', buf.subarray(0, end), true);
      if (this.#state !== 1) return;
      buf = buf.subarray(end);
    }
    // A partial message waits for the rest; copied, so the chunk it came in is not held whole.
    this.#pending = buf.byteLength === 0 ? Buffer.alloc(0) : Buffer.from(buf);
  }
}

function noop(): void {}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(1, ms)));
}
