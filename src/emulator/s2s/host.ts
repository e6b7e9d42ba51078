/**
 * The server shell every speech-to-speech stand-in of this folder's siblings runs in: an HTTP (or HTTPS)
 * server that serves the dialect's REST routes and its control API (`/emulator/<name>/`), upgrades the
 * dialect's WebSocket path through the dialect's own handshake check, keeps every connection with its
 * record, and injects connection faults (refuse the next handshakes with a status, or drop them: the TCP
 * connection closes with no HTTP answer). The dialect supplies `route` and `accept`; the shell knows
 * nothing of any vendor's messages.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Logger } from '../../log.js';
import type { StandInConnection } from './connection.js';
import { handleControl } from './control.js';

/** What the dialect decides about a handshake. */
export type Handshake =
  | { readonly refuse: { readonly status: number; readonly body: string } }
  | { readonly accept: (ws: WebSocket) => StandInConnection };

export interface StandInHostOptions {
  /** The control API's prefix is `/emulator/<name>`. */
  readonly name: string;
  /** Serves a REST request of the dialect's; false when the path is not one of its routes. */
  readonly route: (req: IncomingMessage, res: ServerResponse, base: () => string) => boolean;
  /** Checks a WebSocket handshake; undefined when the path is not the dialect's WebSocket. */
  readonly accept: (req: IncomingMessage, url: URL) => Handshake | undefined;
  /** The error body of a handshake refused by `failNextConnects`. */
  readonly refusalBody: (status: number) => string;
  readonly handleProtocols?: (protocols: Set<string>) => string | false;
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  readonly maxPayloadBytes: number;
  readonly log?: Logger;
}

export interface StandInHost {
  /** All connections since start (or since `forgetClosed`), oldest first. */
  sessions(): StandInConnection[];
  session(id: string): StandInConnection | undefined;
  /** Resolves with the n-th connection (1-based) once it exists. */
  waitForSession(n?: number, timeoutMs?: number): Promise<StandInConnection>;
  /** Refuses the next `count` handshakes with `status` and the vendor's error body. */
  failNextConnects(status: number, count?: number): void;
  /** Drops the next `count` handshakes: the TCP connection closes without an HTTP answer. */
  dropNextConnects(count?: number): void;
  forgetClosed(): number;
  /** Resolves to the base URL, e.g. `http://127.0.0.1:9292`. */
  listen(port: number, host?: string): Promise<string>;
  /** The base URL once listening. */
  base(): string;
  close(): Promise<void>;
}

export function refuseHandshake(socket: Duplex, status: number, body: string): void {
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export function createStandInHost(options: StandInHostOptions): StandInHost {
  const { log, name } = options;
  const faults: (number | 'drop')[] = [];
  const connections = new Map<string, StandInConnection>();
  const waiters = new Set<() => void>();
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxPayloadBytes,
    perMessageDeflate: false,
    ...(options.handleProtocols ? { handleProtocols: options.handleProtocols } : {}),
  });
  let base = '';
  const target = {
    sessions: () => [...connections.values()],
    session: (id: string) => connections.get(id),
    failNextConnects: (status: number, count = 1) => {
      for (let i = 0; i < count; i++) faults.push(status);
    },
    dropNextConnects: (count = 1) => {
      for (let i = 0; i < count; i++) faults.push('drop');
    },
    forgetClosed: () => {
      let n = 0;
      for (const [id, c] of connections) if (c.record.closed_at !== null && connections.delete(id)) n++;
      return n;
    },
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    if (handleControl(req, res, `/emulator/${name}`, target)) return;
    if (options.route(req, res, () => base)) return;
    const body = JSON.stringify({
      detail: `Not found: ${req.method} ${(req.url ?? '').split('?')[0]}. The stand-in serves its vendor's routes and /emulator/${name}/.`,
    });
    res.writeHead(404, { 'content-type': 'application/json' }).end(body);
  };
  const server = options.tls ? createHttpsServer({ ...options.tls }, onRequest) : createHttpServer(onRequest);
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const decision = options.accept(req, url);
    if (decision === undefined)
      return refuseHandshake(socket, 404, JSON.stringify({ detail: `No WebSocket at ${url.pathname}.` }));
    const fault = faults.shift();
    if (fault === 'drop') return socket.destroy();
    if (fault !== undefined) return refuseHandshake(socket, fault, options.refusalBody(fault));
    if ('refuse' in decision) return refuseHandshake(socket, decision.refuse.status, decision.refuse.body);
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = decision.accept(ws);
      connections.set(conn.record.id, conn);
      log?.info({ session: conn.record.id, target: conn.record.target }, `${name} stand-in: session opened`);
      for (const w of [...waiters]) w();
      ws.on('message', (data, isBinary) => {
        try {
          conn.onFrame(data as Buffer, isBinary);
        } catch (err) {
          log?.error({ err, session: conn.record.id }, `${name} stand-in: message failed`);
        }
      });
      ws.on('error', () => {});
      ws.on('close', (code, reason) => {
        conn.closed(code, String(reason));
        log?.info({ session: conn.record.id, code }, `${name} stand-in: session closed`);
      });
    });
  });

  return {
    ...target,
    waitForSession(n = 1, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const c = [...connections.values()][n - 1];
          if (c === undefined) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(c);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${name} session #${n} within ${timeoutMs} ms`));
        }, timeoutMs);
        if (!check()) waiters.add(check);
      });
    },
    async listen(port, host = '127.0.0.1') {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve());
      });
      const addr = server.address();
      if (addr === null || typeof addr === 'string') throw new Error(`${name} stand-in: no TCP address`);
      const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      base = `${options.tls ? 'https' : 'http'}://${h}:${addr.port}`;
      return base;
    },
    base: () => base,
    async close() {
      for (const c of connections.values()) c.close(1001, 'stand-in shutting down');
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
