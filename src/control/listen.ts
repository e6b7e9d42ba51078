/**
 * `GET /v1/sessions/{id}/listen?leg=mixed|caller|bot` (scope `sessions:listen`; the token as
 * `Authorization: Bearer` or `?token=`): a WebSocket on the bridge's one server that carries a live call's
 * audio. First a text frame `{"event":"listen_start","session_id","leg","sample_rate","encoding":"slin"}`,
 * then binary PCM16 mono at the caller's rate, from the call's audio taps (src/media/taps.ts); `mixed` is
 * caller plus bot, summed with clipping and aligned by arrival (src/audio/mix.ts). Closed with 1000 when
 * the call ends.
 *
 * Refusals come before the upgrade, as plain HTTP with the contract's error body: 401 (token), 403
 * (scope), 400 (`leg`), 404 (no such live call of the token's tenant on this instance). A listener whose
 * socket holds more than half a second of unsent audio gets audio dropped (counted in
 * `voicebridge_listen_dropped_bytes_total`), so a slow listener never holds the call or grows memory.
 *
 * A plain GET (no upgrade) answers 426, so the route shows in the REST docs.
 */
import type { FastifyInstance } from 'fastify';
import WebSocket, { WebSocketServer } from 'ws';
import { Mixer } from '../audio/mix.js';
import { assertScope } from '../auth/jwt.js';
import type { BridgeContext } from '../context.js';
import { BridgeError, isBridgeError } from '../errors.js';
import { type MediaEndpoint, refuseUpgrade } from '../media/endpoint.js';
import type { MediaSession } from '../media/session.js';
import type { TapConsumer } from '../media/taps.js';
import { authorizationOf, principal, scopeGuardOrQuery } from './guard.js';
import { errorResponses, SESSION_ID_PARAMS } from './schemas.js';

const LISTEN_PATH = /^\/v1\/sessions\/([^/]+)\/listen\/?$/;
export const LEGS = ['mixed', 'caller', 'bot'] as const;
export type ListenLeg = (typeof LEGS)[number];

/** Unsent audio a listener may hold before its audio is dropped, in seconds. */
export const MAX_BEHIND_S = 0.5;
/** How far one side of the mix may run ahead of the other before it is let out alone, in seconds. */
const MIX_HOLD_S = 0.1;

export interface ListenEndpoint {
  /** Closes the open listeners with 1001. */
  close(): void;
}

/** Routes the listen path's upgrades next to the media endpoint's. */
export function attachListen(ctx: BridgeContext, media: MediaEndpoint): ListenEndpoint {
  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    clientTracking: false,
    // A listener sends nothing but control frames.
    maxPayload: 1024,
  });
  const open = new Set<WebSocket>();

  media.route(
    (path) => LISTEN_PATH.test(path),
    (req, socket, head, url) => {
      const query = Object.fromEntries(url.searchParams);
      admit(ctx, media, req.headers.authorization, url.pathname, query).then(
        ({ session, leg }) => {
          if (socket.destroyed) return;
          wss.handleUpgrade(req, socket, head, (ws) => {
            open.add(ws);
            ws.once('close', () => open.delete(ws));
            stream(ctx, ws, session, leg);
          });
        },
        (err: unknown) => {
          if (!isBridgeError(err)) ctx.log.error({ err }, 'listen upgrade failed');
          refuseUpgrade(socket, isBridgeError(err) ? err : new BridgeError('internal', 'internal error'));
        },
      );
    },
  );

  return {
    close() {
      for (const ws of open) ws.close(1001, 'bridge shutting down');
      open.clear();
      wss.close();
    },
  };
}

async function admit(
  ctx: BridgeContext,
  media: MediaEndpoint,
  authorization: string | undefined,
  pathname: string,
  query: Record<string, string>,
): Promise<{ session: MediaSession; leg: ListenLeg }> {
  const who = await ctx.verifyRest(authorizationOf(authorization, query));
  assertScope(who, 'sessions:listen');
  const leg = query.leg ?? 'mixed';
  if (!(LEGS as readonly string[]).includes(leg)) {
    throw new BridgeError('bad_request', `leg must be one of ${LEGS.join(', ')}; got ${JSON.stringify(leg)}`);
  }
  let id: string;
  try {
    id = decodeURIComponent(LISTEN_PATH.exec(pathname)![1]!);
  } catch {
    throw new BridgeError('bad_request', 'the session id in the path is not valid percent-encoding');
  }
  const session = media.find(who.tenant, id);
  if (session !== undefined) return { session, leg: leg as ListenLeg };
  // Held by another instance (a shared state store) or not live at all: either way not here.
  const elsewhere = (await ctx.sessions.get(who.tenant, id)) !== undefined;
  throw new BridgeError(
    'not_found',
    elsewhere
      ? `session "${id}" is held by another instance of the bridge; listen on that instance`
      : `no live session "${id}" for this tenant: GET /v1/sessions lists them`,
  );
}

/** The call's audio onto the listener's socket until either ends. */
function stream(ctx: BridgeContext, ws: WebSocket, session: MediaSession, leg: ListenLeg): void {
  const { metrics } = ctx;
  const rate = session.taps.rate;
  const maxBehind = Math.round(rate * MAX_BEHIND_S) * 2;
  const dropped = metrics.listenDroppedBytes;
  ws.on('error', () => {});
  ws.send(
    JSON.stringify({
      event: 'listen_start',
      session_id: session.info.session_id,
      leg,
      sample_rate: rate,
      encoding: 'slin',
    }),
  );
  const send = (pcm: Int16Array): void => {
    const bytes = pcm.byteLength;
    if (ws.readyState !== WebSocket.OPEN || bytes === 0) return;
    if (ws.bufferedAmount + bytes > maxBehind) {
      dropped.inc(bytes);
      return;
    }
    // The tap's samples are reused after this call: the socket gets its own copy.
    ws.send(Buffer.from(new Uint8Array(pcm.buffer, pcm.byteOffset, bytes)));
  };
  const end = (): void => {
    if (ws.readyState === WebSocket.OPEN) ws.close(1000, 'session ended');
  };
  let consumer: TapConsumer;
  if (leg === 'caller') consumer = { caller: send, end };
  else if (leg === 'bot') consumer = { bot: send, end };
  else {
    const mixer = new Mixer(Math.round(rate * MIX_HOLD_S), send);
    consumer = { caller: (pcm) => mixer.a(pcm), bot: (pcm) => mixer.b(pcm), end };
  }
  metrics.listeners.inc();
  const off = session.taps.subscribe(consumer);
  ws.once('close', () => {
    off();
    metrics.listeners.dec();
  });
}

/** The plain-HTTP face of the listen path: documented, and a 426 telling the client to upgrade. */
export function registerListenRoute(app: FastifyInstance, verify: BridgeContext['verifyRest']): void {
  app.get(
    '/v1/sessions/:id/listen',
    {
      onRequest: scopeGuardOrQuery(verify, 'sessions:listen'),
      schema: {
        tags: ['sessions'],
        summary: 'Listen to a live call (WebSocket; scope sessions:listen)',
        description:
          'Upgrade to a WebSocket: a text frame {"event":"listen_start","session_id","leg","sample_rate",' +
          '"encoding":"slin"}, then binary PCM16 mono at the caller\'s rate; closed with 1000 when the call ' +
          'ends. A listener that falls behind by more than half a second loses audio. The token may be ' +
          'given as ?token=. Without an upgrade: 426.',
        security: [{ bearerAuth: [] }],
        params: SESSION_ID_PARAMS,
        querystring: {
          type: 'object',
          properties: {
            leg: { type: 'string', enum: [...LEGS], default: 'mixed' },
            token: { type: 'string' },
          },
        },
        response: errorResponses(400, 401, 403, 404, 426),
      },
    },
    async (req, reply) => {
      principal(req);
      return reply
        .code(426)
        .header('upgrade', 'websocket')
        .send(
          new BridgeError(
            'upgrade_required',
            'GET /v1/sessions/{id}/listen is a WebSocket: send the request with "Upgrade: websocket"',
          ).toBody(),
        );
    },
  );
}
