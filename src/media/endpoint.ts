/**
 * `GET /v1/media`: the provider's WebSocket, on the same HTTP server as the REST routes. The token is
 * checked before the upgrade (a refusal is a plain HTTP 401, no socket); then the first frame must be a
 * valid `session_start`, which makes the connection a session. One heartbeat timer pings every socket
 * and ends those that did not answer the previous ping.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { DEFAULT_TENANT } from '../auth/jwt.js';
import type { Clock } from '../clock.js';
import type { BridgeContext } from '../context.js';
import { ROOT_DIALECT } from '../dialects/index.js';
import { BridgeError, isBridgeError } from '../errors.js';
import { Admission } from '../limits/admission.js';
import { clientAddress, trustFn } from '../limits/client-address.js';
import type { AudioPipeline } from '../pipeline/types.js';
import type { BotNotice } from './bot/types.js';
import { ProviderConnection } from './connection.js';
import { PacingLoop } from './pacing-loop.js';
import { DIALECTS } from './providers/index.js';
import type { ProviderDialect } from './providers/types.js';
import type { MediaSession } from './session.js';

export const MEDIA_PATH = '/v1/media';

const DIALECT_PATH = /^\/v1\/media\/([a-z]+)(?:\/([A-Za-z0-9][A-Za-z0-9._-]{0,63}))?\/?$/;

/** The dialect and tenant a media path names: `/v1/media`, `/v1/media/<dialect>[/<tenant>]`. */
export function mediaRoute(pathname: string): { dialect: ProviderDialect; tenant: string } | undefined {
  if (pathname === MEDIA_PATH) return { dialect: DIALECTS[ROOT_DIALECT], tenant: DEFAULT_TENANT };
  const m = DIALECT_PATH.exec(pathname);
  if (m === null || m[1] === ROOT_DIALECT || !Object.hasOwn(DIALECTS, m[1]!)) return undefined;
  return { dialect: DIALECTS[m[1] as keyof typeof DIALECTS], tenant: m[2] ?? DEFAULT_TENANT };
}

export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer, url: URL) => void;

export interface MediaEndpoint {
  /** Connections open now (sessions and sockets still before their session_start). */
  readonly connections: number;
  /**
   * Hands `event` to the bot of the live session (tenant, id) this instance holds; false when it holds
   * none such. A scan of the connections: events are rare beside audio, and a scan keeps no index in step.
   */
  notify(tenant: string, sessionId: string, event: BotNotice): boolean;
  /**
   * Another WebSocket path on the same server (listen-in): upgrades whose path `match`es go to `handle`,
   * which answers them (refuseUpgrade, or its own WebSocketServer). Checked before the media paths.
   */
  route(match: (pathname: string) => boolean, handle: UpgradeHandler): void;
  /** The live session (tenant, id) this instance holds (a scan, as `notify`); undefined when none. */
  find(tenant: string, sessionId: string): MediaSession | undefined;
  /**
   * Graceful stop: new upgrades are refused (503) already (ctx.draining), live calls get up to
   * `drainTimeoutMs` to end, then are closed with 1001 and their bots told `session_end`.
   */
  close(): Promise<void>;
}

export function attachMediaEndpoint(
  server: Server,
  ctx: BridgeContext,
  pipeline: AudioPipeline,
  /** The admission caps' clock (tests drive their own); the system's by default. */
  limitClock?: Pick<Clock, 'now'>,
): MediaEndpoint {
  const { config, log } = ctx;
  const wss = new WebSocketServer({
    noServer: true,
    // ws accepts 100 MiB by default; a provider frame is a few KB (config MAX_PAYLOAD_BYTES). Over it: 1009.
    maxPayload: config.maxPayloadBytes,
    perMessageDeflate: false,
    clientTracking: false,
    // A dialect with a subprotocol of its own gets it answered (onUpgrade refused an offer without it);
    // the others answer the first offered, as ws does by default.
    handleProtocols: (offered, req) => {
      const want = mediaRoute(new URL(req.url ?? '/', 'http://localhost').pathname)?.dialect.subprotocol;
      if (want !== undefined) return offered.has(want) ? want : false;
      return offered.values().next().value ?? false;
    },
  });
  const loop = new PacingLoop(config.paceMinGapMs, ctx.clock);
  const conns = new Set<ProviderConnection>();
  const trust = trustFn(config.trustProxy);
  const admission = new Admission({
    maxSessions: config.maxSessions,
    connectPerSec: config.mediaConnectPerSec,
    registry: ctx.metrics.registry,
    trust,
    clock: limitClock,
  });
  const others: { match: (pathname: string) => boolean; handle: UpgradeHandler }[] = [];
  /** Upgrades admitted and still authenticating: they count against MAX_SESSIONS too. */
  let pending = 0;

  const heartbeat = setInterval(() => {
    for (const c of conns) c.heartbeat();
  }, config.heartbeatIntervalMs);
  heartbeat.unref();

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    // Errors on a socket that is being refused must not become uncaught exceptions.
    socket.on('error', noop);
    const url = new URL(req.url ?? '/', 'http://localhost');
    for (const r of others) {
      if (r.match(url.pathname)) {
        r.handle(req, socket, head, url);
        return;
      }
    }
    const route = mediaRoute(url.pathname);
    if (route === undefined) {
      refuseUpgrade(
        socket,
        new BridgeError(
          'not_found',
          `no WebSocket endpoint at ${url.pathname}; use ${MEDIA_PATH}, or ${MEDIA_PATH}/<dialect>[/<tenant>] with a dialect of ${Object.keys(
            DIALECTS,
          )
            .filter((d) => d !== ROOT_DIALECT)
            .join(', ')}`,
        ),
      );
      return;
    }
    const want = route.dialect.subprotocol;
    const offered = offeredProtocols(req);
    if (want !== undefined && offered.length > 0 && !offered.includes(want)) {
      refuseUpgrade(
        socket,
        new BridgeError(
          'invalid_field',
          `Sec-WebSocket-Protocol must offer ${want} on ${url.pathname}, got ${offered.join(', ')}`,
          { field: 'Sec-WebSocket-Protocol' },
        ),
      );
      return;
    }
    // Rate and capacity caps (src/limits/admission.ts), before any token work.
    const refusal = admission.check(req, conns.size + pending);
    if (refusal !== undefined) {
      log.warn({ code: refusal.code, remote: clientAddress(req, trust) }, 'media upgrade refused');
      refuseUpgrade(socket, refusal);
      return;
    }
    if (ctx.draining) {
      refuseUpgrade(
        socket,
        new BridgeError('not_ready', 'the bridge is shutting down; connect to another instance'),
      );
      return;
    }
    pending++;
    route.dialect.authenticate(req, url, route.tenant, ctx).then(
      (auth) => {
        pending--;
        if (ctx.draining) {
          refuseUpgrade(
            socket,
            new BridgeError('not_ready', 'the bridge is shutting down; connect to another instance'),
          );
          return;
        }
        socket.removeListener('error', noop);
        wss.handleUpgrade(req, socket, head, (ws) => {
          const conn = new ProviderConnection(ws, auth, {
            ctx,
            dialect: route.dialect,
            pipeline,
            loop,
            forget: (c) => conns.delete(c),
          });
          conns.add(conn);
        });
      },
      (err: unknown) => {
        pending--;
        if (!isBridgeError(err)) log.error({ err }, 'media auth failed');
        refuseUpgrade(socket, isBridgeError(err) ? err : new BridgeError('internal', 'internal error'));
      },
    );
  };
  server.on('upgrade', onUpgrade);

  function find(tenant: string, sessionId: string): MediaSession | undefined {
    for (const c of conns) {
      const s = c.session;
      if (s !== undefined && !s.ended && s.info.session_id === sessionId && s.info.tenant === tenant)
        return s;
    }
    return undefined;
  }

  return {
    get connections() {
      return conns.size;
    },
    notify(tenant, sessionId, event) {
      const s = find(tenant, sessionId);
      s?.notify(event);
      return s !== undefined;
    },
    find,
    route(match, handle) {
      others.push({ match, handle });
    },
    async close() {
      const deadline = Date.now() + config.drainTimeoutMs;
      if (conns.size > 0)
        log.info({ calls: conns.size, drainTimeoutMs: config.drainTimeoutMs }, 'draining calls');
      while (conns.size > 0 && Date.now() < deadline) await sleep(Math.min(50, deadline - Date.now()));
      for (const c of conns) c.shutdown();
      // Give the close handshakes a moment, then cut what is left.
      const cut = Date.now() + 1_000;
      while (conns.size > 0 && Date.now() < cut) await sleep(20);
      for (const c of conns) c.terminate();
      conns.clear();
      clearInterval(heartbeat);
      loop.stop();
      server.removeListener('upgrade', onUpgrade);
      wss.close();
    },
  };
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  426: 'Upgrade Required',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** Answers an upgrade request with a plain HTTP error (the contract's body) and closes the socket. */
export function refuseUpgrade(socket: Duplex, err: BridgeError): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(err.toBody());
  socket.end(
    `HTTP/1.1 ${err.status} ${STATUS_TEXT[err.status] ?? 'Error'}\r\n` +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

/** The subprotocols an upgrade offers (`Sec-WebSocket-Protocol`, comma-separated). */
function offeredProtocols(req: IncomingMessage): string[] {
  const h = req.headers['sec-websocket-protocol'];
  if (typeof h !== 'string') return [];
  return h
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

function noop(): void {}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(1, ms)));
}
