/**
 * Assembles one bridge instance: a single HTTP server carrying the REST control plane and the
 * media WebSocket endpoint.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { createRestVerifier } from './auth/jwt.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import type { BridgeContext } from './context.js';
import { registerCallRoutes } from './control/calls.js';
import { registerConsoleRoutes } from './control/console.js';
import { registerDocs } from './control/docs.js';
import { registerEventRoutes } from './control/events.js';
import { registerHealthRoutes } from './control/health.js';
import { attachListen, registerListenRoute } from './control/listen.js';
import { registerMediaStreamRoutes } from './control/media-stream.js';
import { registerMediaTokenRoutes } from './control/media-tokens.js';
import { registerRecordingRoutes } from './control/recordings.js';
import { registerSessionRoutes } from './control/sessions.js';
import { BridgeError, isBridgeError } from './errors.js';
import { HeldUp } from './held-up.js';
import { trustFn } from './limits/client-address.js';
import { registerRestRateLimit } from './limits/rest.js';
import { createFormattedLogger, type Logger } from './log.js';
import { type AudioSocketListener, createAudioSocketListener } from './media/audiosocket-listener.js';
import type { BotNotice } from './media/bot/types.js';
import { CallEvents } from './media/call-events.js';
import { attachMediaEndpoint, type MediaEndpoint } from './media/endpoint.js';
import { createMessagingClient } from './messaging/client.js';
import { registerMessagingRoutes } from './messaging/routes.js';
import { createMessageStore } from './messaging/store.js';
import type { MessagingClient } from './messaging/types.js';
import { createMetrics } from './metrics.js';
import { createPipeline, loadSuppressor } from './pipeline/index.js';
import type { AudioPipeline } from './pipeline/types.js';
import { createProviderClient, type ProviderClient } from './provider/client.js';
import { Recordings } from './recording/index.js';
import { createStateStore } from './state/index.js';
import { createTools } from './tools/index.js';

export interface BridgeOptions {
  /** A logger to use instead of one made from `config.logLevel` (tests capture logs this way). */
  readonly log?: Logger;
  /** A provider client to use instead of one made from `config.providerBaseUrl`. */
  readonly provider?: ProviderClient;
  /** An audio pipeline to use instead of one made from `config.dspWorkers`; closed with the bridge. */
  readonly pipeline?: AudioPipeline;
  /** A messaging client to use instead of one made from `config.messagingBaseUrl`; closed with the bridge. */
  readonly messaging?: MessagingClient;
  /** The clock of the rate limits (media admission, REST, failed authentications); the system's by default. */
  readonly limitClock?: Pick<Clock, 'now'>;
  /** The clock of the calls' timers (BridgeContext.clock); the system's by default. */
  readonly clock?: Clock;
}

export interface Bridge {
  readonly app: FastifyInstance;
  readonly ctx: BridgeContext;
  /** The media WebSocket endpoint, `GET /v1/media`. */
  readonly media: MediaEndpoint;
  /** The AudioSocket TCP listener, when AUDIOSOCKET_PORT is set. */
  readonly audioSocket: AudioSocketListener | undefined;
  /** Its bound address once listening, e.g. `tcp://127.0.0.1:9092`. */
  readonly audioSocketUrl: string | undefined;
  readonly pipeline: AudioPipeline;
  /** Listens on `config.host`:`config.port`; resolves to the bound address, e.g. `http://127.0.0.1:8080`. */
  listen(): Promise<string>;
  /** Graceful stop: readiness false, live sessions drained up to `drainTimeoutMs`, then closed. */
  close(): Promise<void>;
}

/**
 * Bound on one messaging call, its wait for a send slot and its backoffs on rate limits included: a
 * send does not block like a consult, and 20 s keeps it well inside the server's request timeout.
 */
const MESSAGING_CALL_TIMEOUT_MS = 20_000;

export async function createBridge(config: Config, options: BridgeOptions = {}): Promise<Bridge> {
  const log = options.log ?? (await createFormattedLogger(config.logLevel, config.logFormat));
  const metrics = createMetrics();
  const provider =
    options.provider ??
    (config.providerBaseUrl === undefined
      ? undefined
      : createProviderClient({
          baseUrl: config.providerBaseUrl,
          token: config.providerToken,
          connectTimeoutMs: config.providerConnectTimeoutMs,
          readTimeoutMs: config.providerReadTimeoutMs,
          metrics,
          log,
        }));
  // In memory, or shared through Redis (STATE_STORE); the media path never waits on it for audio.
  const state = await createStateStore(config, log, metrics);
  const messaging =
    options.messaging ??
    (config.messagingBaseUrl === undefined
      ? undefined
      : createMessagingClient({
          baseUrl: config.messagingBaseUrl,
          token: config.messagingToken,
          ...(config.messagingAccountId === undefined ? {} : { accountId: config.messagingAccountId }),
          connectTimeoutMs: config.providerConnectTimeoutMs,
          readTimeoutMs: MESSAGING_CALL_TIMEOUT_MS,
          sendsPerSecond: config.messagingSendsPerSec,
          metrics,
          log,
        }));
  const ctx: BridgeContext = {
    config,
    log,
    metrics,
    provider,
    verifyRest: createRestVerifier({ secret: config.authJwtSecret, jwksUrl: config.authJwksUrl }),
    sessions: state.sessions,
    tenants: state.tenants,
    messaging,
    messages: createMessageStore(config, state.link),
    sessionEvents: state.sessionEvents,
    callEvents: new CallEvents(log),
    recordings: new Recordings({
      dir: config.recordingsDir,
      recordAll: config.recordCalls,
      retentionDays: config.recordingsRetentionDays,
      log,
      registry: metrics.registry,
    }),
    clock: options.clock ?? systemClock,
    heldUp: new HeldUp(),
    // The model's tools on each call whose bot has them (src/tools/); set up just below.
    tools: (setup) => callTools.open(setup),
    draining: false,
  };
  const callTools = createTools(ctx);
  ctx.recordings.startRetention();

  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // The consult route blocks up to the provider's 20 s + 5 s: the server must outlast the client bound.
    requestTimeout: config.requestTimeoutMs,
    // No idle-socket timeout on top: requestTimeout bounds a request whole (headers 60 s at most, Node's
    // default), keepAliveTimeout an idle connection between requests, and an upgraded media socket has
    // the heartbeat (ws clears the socket timeout on upgrade). A third clock would only race those.
    connectionTimeout: 0,
    // A `__proto__` key in a JSON body is dropped as it is parsed, so it can set no prototype, and the
    // rest of the body is judged as usual (the default refuses the whole body as "not valid JSON", which
    // names nothing: a webhook post with one in an event would lose its other events).
    onProtoPoisoning: 'remove',
    // Past the 60 s idle timeout of common load balancers and proxies (a cloud balancer's default, nginx's
    // upstream keepalive_timeout), so the proxy closes an idle connection first: were the bridge first, a
    // request the proxy sends on it as it closes would fail with a 502. An idle socket outlives the
    // headers timeout (checked on Node 20), so this is its bound.
    keepAliveTimeout: 72_000,
    bodyLimit: config.bodyLimitBytes,
    // Client addresses (rate limits, logs) from X-Forwarded-For only for the proxies TRUST_PROXY names.
    ...(config.trustProxy === undefined ? {} : { trustProxy: trustFn(config.trustProxy)! }),
    // A body field of the wrong type is a 400, not quietly converted ("5" for 5, or 5 for "5").
    ajv: { customOptions: { coerceTypes: false } },
  });

  app.setErrorHandler((err, req, reply) => {
    if (isBridgeError(err)) return reply.code(err.status).send(err.toBody());
    const e = err as { validation?: unknown; statusCode?: number; message: string; code?: string };
    if (e.validation !== undefined) {
      return reply.code(400).send(new BridgeError('bad_request', e.message).toBody());
    }
    if (e.statusCode === 413)
      return reply.code(413).send(new BridgeError('payload_too_large', e.message).toBody());
    if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500) {
      return reply.code(e.statusCode).send(new BridgeError('bad_request', e.message).toBody());
    }
    req.log.error({ err }, 'request failed');
    return reply.code(500).send(new BridgeError('internal', 'internal error').toBody());
  });
  app.setNotFoundHandler((req, reply) =>
    reply
      .code(404)
      .send(new BridgeError('not_found', `no route ${req.method} ${req.url.split('?')[0]}`).toBody()),
  );

  // Both hook routes as they are added: register them first.
  await registerRestRateLimit(app, {
    max: config.restRateLimit,
    windowMs: config.restRateWindowMs,
    authFailMax: config.restAuthFailLimit,
    clock: options.limitClock,
  });
  await registerDocs(app);
  registerHealthRoutes(app, ctx);
  registerMediaStreamRoutes(app, ctx, ctx.verifyRest);
  registerCallRoutes(app, ctx, ctx.verifyRest);
  registerSessionRoutes(app, ctx, ctx.verifyRest);
  registerMediaTokenRoutes(app, ctx, ctx.verifyRest);
  registerConsoleRoutes(app);
  registerEventRoutes(app, ctx, ctx.verifyRest);
  registerListenRoute(app, ctx.verifyRest);
  registerMessagingRoutes(app, ctx, ctx.verifyRest);
  registerRecordingRoutes(app, ctx, ctx.verifyRest);

  const pipeline =
    options.pipeline ??
    createPipeline({
      workers: config.dspWorkers,
      log,
      metrics,
      heldUp: ctx.heldUp,
      // Inline, this thread runs the noise suppressor: loaded now (a few ms), as a tenant may turn it on
      // at any time. Workers load their own.
      ...(config.dspWorkers === 0 && { suppressor: await loadSuppressor() }),
    });
  const media = attachMediaEndpoint(app.server, ctx, pipeline, options.limitClock);
  // Listen-in's WebSocket path, beside the media endpoint's on the same server.
  const listen = attachListen(ctx, media);
  // Message events reach the bots of the calls this instance holds (others' through the store's channel).
  const audioSocket =
    config.audioSocket.port === undefined
      ? undefined
      : createAudioSocketListener(ctx, pipeline, {
          ...config.audioSocket,
          port: config.audioSocket.port,
          others: () => media.connections,
        });
  let audioSocketUrl: string | undefined;
  state.sessionEvents.attach(
    (tenant, id, event) =>
      media.notify(tenant, id, event as BotNotice) ||
      (audioSocket?.notify(tenant, id, event as BotNotice) ?? false),
  );
  if (config.messagingWebhookSecret === undefined && !config.production) {
    log.warn(
      'MESSAGING_WEBHOOK_SECRET is not set: POST /v1/webhooks/messaging accepts posts without a token (development only)',
    );
  }

  return {
    app,
    ctx,
    media,
    audioSocket,
    get audioSocketUrl() {
      return audioSocketUrl;
    },
    pipeline,
    async listen() {
      await app.listen({ port: config.port, host: config.host });
      if (audioSocket !== undefined) {
        audioSocketUrl = await audioSocket.listen();
        log.info({ url: audioSocketUrl }, 'AudioSocket listener started');
      }
      const addr = app.server.address();
      if (addr === null || typeof addr === 'string') return String(addr);
      const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      return `http://${host}:${addr.port}`;
    },
    async close() {
      ctx.draining = true;
      // Calls first (they need the pipeline and the server), then the server, the pipeline last.
      await Promise.all([media.close(), audioSocket?.close()]);
      listen.close();
      ctx.callEvents.close();
      await callTools.close();
      // The calls' recordings are finished (sizes patched, sidecars final) before the process goes.
      await ctx.recordings.close();
      await app.close();
      await provider?.close();
      await messaging?.close();
      await state.close();
      await pipeline.close();
    },
  };
}
