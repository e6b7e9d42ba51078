/**
 * The OpenAI Realtime stand-in: an HTTP (or HTTPS) server whose `/v1/realtime?model=...` upgrades to a
 * WebSocket speaking the GA interface (`Authorization: Bearer <key>`, or the browser subprotocols
 * `realtime` + `openai-insecure-api-key.<key>`), as does Azure OpenAI's `/openai/v1/realtime?model=...`
 * (which also takes the key as an `api-key` header), and whose `/emulator/realtime/` paths are its control
 * API. The `openai` package's client only dials `wss:`, so give `tls` (a certificate and key) to serve
 * it; the Agents SDK's `url` option takes `ws:` too.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { Logger } from '../../log.js';
import { type ConnectionOptions, RealtimeConnection } from './connection.js';
import { CONTROL_PREFIX, handleControl } from './control.js';
import { ConnectFaults, handshakeErrorBody } from './faults.js';

export interface RealtimeEmulatorOptions {
  /** The one API key accepted; by default any non-empty bearer key is. */
  readonly apiKey?: string;
  /** Reply length when instructions do not say (`reply_ms=N`); default 1500 ms. */
  readonly replyMs?: number;
  /** Audio per `response.output_audio.delta`; default 100 ms. */
  readonly deltaMs?: number;
  /** Deltas go out this many times faster than real time; 0: as fast as the socket takes. Default 4. */
  readonly outputRateFactor?: number;
  /** Audio each response keeps ahead of that pace, ms (a client's playback buffer). Default 0. */
  readonly leadMs?: number;
  /** Serve HTTPS / WSS with this PEM certificate and key. */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /** Largest client frame; default 16 MiB (the real server takes appends up to 15 MiB). */
  readonly maxPayloadBytes?: number;
  readonly log?: Logger;
}

export const REALTIME_PATH = '/v1/realtime';
/** Azure OpenAI's GA path for the same interface, its deployment named by `?model=`. */
export const AZURE_REALTIME_PATH = '/openai/v1/realtime';

export interface RealtimeEmulator {
  /** All connections since start (or since `forgetClosed`), oldest first. */
  sessions(): RealtimeConnection[];
  session(id: string): RealtimeConnection | undefined;
  /** Resolves with the n-th connection (1-based) once it exists. */
  waitForSession(n?: number, timeoutMs?: number): Promise<RealtimeConnection>;
  failNextConnects(status: number, count?: number): void;
  forgetClosed(): number;
  /** Resolves to the base URL, e.g. `http://127.0.0.1:9191`. */
  listen(port: number, host?: string): Promise<string>;
  /** The WebSocket URL of a model, e.g. `ws://127.0.0.1:9191/v1/realtime?model=gpt-realtime`. */
  wsUrl(model?: string): string;
  close(): Promise<void>;
}

function refuse(socket: Duplex, status: number, body: string): void {
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * The key a handshake carries, and every way it carried one: the Authorization header (Bearer), Azure's
 * `api-key` header (on Azure's path only, as Azure takes it), or the browser subprotocol.
 */
function keyOf(req: IncomingMessage, azure: boolean): { key: string | undefined; via: string[] } {
  const via: string[] = [];
  let key: string | undefined;
  const auth = req.headers.authorization;
  if (auth !== undefined) {
    via.push('bearer');
    key = /^Bearer\s+(\S+)$/i.exec(auth)?.[1];
  }
  const apiKey = req.headers['api-key'];
  if (typeof apiKey === 'string') {
    via.push('api-key');
    if (azure) key ??= apiKey;
  }
  const protocols = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  const fromProtocol = protocols
    .find((p) => p.startsWith('openai-insecure-api-key.'))
    ?.slice('openai-insecure-api-key.'.length);
  if (fromProtocol !== undefined) {
    via.push('subprotocol');
    key ??= fromProtocol;
  }
  return { key, via };
}

export function createRealtimeEmulator(options: RealtimeEmulatorOptions = {}): RealtimeEmulator {
  const connOptions: ConnectionOptions = {
    replyMs: options.replyMs ?? 1500,
    deltaMs: options.deltaMs ?? 100,
    outputRateFactor: options.outputRateFactor ?? 4,
    leadMs: options.leadMs ?? 0,
  };
  const log = options.log;
  const faults = new ConnectFaults();
  const connections = new Map<string, RealtimeConnection>();
  const waiters = new Set<() => void>();
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxPayloadBytes ?? 16 * 1024 * 1024,
    perMessageDeflate: false,
    handleProtocols: (protocols) => (protocols.has('realtime') ? 'realtime' : false),
  });
  const target = {
    sessions: () => [...connections.values()],
    session: (id: string) => connections.get(id),
    failNextConnects: (status: number, count = 1) => faults.failNext(status, count),
    forgetClosed: () => {
      let n = 0;
      for (const [id, c] of connections) if (c.record.closed_at !== null && connections.delete(id)) n++;
      return n;
    },
  };
  const onRequest = (req: IncomingMessage, res: import('node:http').ServerResponse) => {
    if (handleControl(req, res, target)) return;
    const body = JSON.stringify({
      error: {
        message: `Not found: ${req.method} ${req.url}. The stand-in serves ${REALTIME_PATH} (WebSocket) and ${CONTROL_PREFIX}/.`,
        type: 'invalid_request_error',
      },
    });
    res.writeHead(404, { 'content-type': 'application/json' }).end(body);
  };
  const server: Server = options.tls
    ? createHttpsServer({ ...options.tls }, onRequest)
    : createHttpServer(onRequest);
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const azure = url.pathname === AZURE_REALTIME_PATH;
    if (url.pathname !== REALTIME_PATH && !azure)
      return refuse(
        socket,
        404,
        handshakeErrorBody(404, `No WebSocket at ${url.pathname}; use ${REALTIME_PATH}?model=...`),
      );
    const failWith = faults.take();
    if (failWith !== undefined) return refuse(socket, failWith, handshakeErrorBody(failWith));
    const { key, via } = keyOf(req, azure);
    if (key === undefined || key === '' || (options.apiKey !== undefined && key !== options.apiKey)) {
      const why =
        key === undefined
          ? "You didn't provide an API key. Provide it in an Authorization header (Bearer)."
          : undefined;
      return refuse(socket, 401, handshakeErrorBody(401, why));
    }
    const model = url.searchParams.get('model');
    if (model === null || model === '') {
      return refuse(
        socket,
        400,
        JSON.stringify({
          error: {
            message: "Missing required parameter: 'model'.",
            type: 'invalid_request_error',
            code: 'missing_required_parameter',
            param: 'model',
          },
        }),
      );
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = new RealtimeConnection(ws, model, connOptions);
      conn.record.key_via = via;
      conn.record.path = url.pathname;
      connections.set(conn.record.id, conn);
      log?.info({ session: conn.record.id, model }, 'realtime stand-in: session opened');
      for (const w of [...waiters]) w();
      ws.on('message', (data, isBinary) => {
        try {
          conn.onFrame(data as Buffer, isBinary);
        } catch (err) {
          log?.error({ err, session: conn.record.id }, 'realtime stand-in: event failed');
        }
      });
      ws.on('error', () => {});
      ws.on('close', (code) => {
        conn.closed(code);
        log?.info({ session: conn.record.id, code }, 'realtime stand-in: session closed');
      });
    });
  });

  let base = '';
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
          reject(new Error(`no realtime session #${n} within ${timeoutMs} ms`));
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
      if (addr === null || typeof addr === 'string') throw new Error('realtime stand-in: no TCP address');
      const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      base = `${options.tls ? 'https' : 'http'}://${h}:${addr.port}`;
      return base;
    },
    wsUrl(model = 'gpt-realtime') {
      return `${base.replace(/^http/, 'ws')}${REALTIME_PATH}?model=${encodeURIComponent(model)}`;
    },
    async close() {
      for (const c of connections.values()) c.close(1001, 'stand-in shutting down');
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
