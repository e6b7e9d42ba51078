/**
 * `GET /v1/events` (scope `sessions:read`; the token as `Authorization: Bearer` or `?token=`): the live
 * events of the token tenant's calls as Server-Sent Events. Each message's `event:` is its type and its
 * `data:` one JSON object with `session_id` at the top (src/media/call-events.ts lists the types).
 *
 * The route hijacks the reply and writes the stream itself. A comment line every `HEARTBEAT_MS` keeps
 * proxies from closing an idle stream. A client that does not read loses events (counted in
 * `voicebridge_events_dropped_total`) once `MAX_BUFFERED_BYTES` wait in its socket: nothing grows and no
 * call waits on it. The stream ends when the client goes away or the bridge closes.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { RestVerifier } from '../auth/jwt.js';
import type { BridgeContext } from '../context.js';
import type { CallEventData } from '../media/call-events.js';
import { principal, scopeGuardOrQuery } from './guard.js';
import { errorResponses } from './schemas.js';

export const HEARTBEAT_MS = 15_000;
/** What may wait unsent in one client's socket; past it, events are dropped for that client. */
export const MAX_BUFFERED_BYTES = 256 * 1024;

export function registerEventRoutes(app: FastifyInstance, ctx: BridgeContext, verify: RestVerifier): void {
  const open = new Set<ServerResponse>();
  // Before the server closes: an open stream would hold its close forever.
  app.addHook('preClose', async () => {
    for (const res of open) res.end();
    open.clear();
  });

  app.get(
    '/v1/events',
    {
      onRequest: scopeGuardOrQuery(verify, 'sessions:read'),
      schema: {
        tags: ['sessions'],
        summary: "Live events of the token tenant's calls (Server-Sent Events)",
        description:
          'A text/event-stream: session_started, session_updated, session_ended, level (caller_dbfs, ' +
          'bot_dbfs, 5 a second per call), mark, clear, error, bot_latency_ms, message_status, ' +
          'message_button; each data a JSON object with session_id. The token may be given as ?token=.',
        security: [{ bearerAuth: [] }],
        querystring: {
          type: 'object',
          properties: {
            token: { type: 'string', description: 'the REST token, for clients that cannot set headers' },
          },
        },
        response: {
          200: { description: 'text/event-stream', type: 'string' },
          ...errorResponses(401, 403),
        },
      },
    },
    async (req, reply) => {
      const { tenant } = principal(req);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        // nginx buffers responses unless told not to.
        'x-accel-buffering': 'no',
      });
      res.write(': voicebridge live events\nretry: 2000\n\n');
      open.add(res);
      ctx.metrics.eventStreams.inc();
      const dropped = ctx.metrics.eventsDropped;
      const send = (event: string, data: CallEventData): void => {
        if (res.writableLength > MAX_BUFFERED_BYTES) {
          dropped.inc();
          return;
        }
        res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      };
      const unsubscribe = ctx.callEvents.subscribe(tenant, send);
      const heartbeat = setInterval(() => {
        if (res.writableLength <= MAX_BUFFERED_BYTES) res.write(': ping\n\n');
      }, HEARTBEAT_MS);
      heartbeat.unref();
      let closed = false;
      const close = (): void => {
        if (closed) return;
        closed = true;
        clearInterval(heartbeat);
        unsubscribe();
        open.delete(res);
        ctx.metrics.eventStreams.dec();
      };
      // The response's close: the client went away, or the stream was ended (a request's own 'close'
      // comes as soon as its empty body is read, so it says nothing about the client).
      res.on('close', close);
      res.on('error', close);
    },
  );
}
