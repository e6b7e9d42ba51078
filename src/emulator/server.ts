/**
 * The provider emulator: the provider's voice REST API for development, tests and load tests,
 * with dial-plan outcomes and timings, plus synthetic calls placed into a registered media endpoint, and
 * the messaging APIs (chat and RCS) with their webhooks and a control API (src/emulator/messaging/).
 * Runs standalone (`npm run emulator`) or in-process beside the bridge (`npm start` without a provider).
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { createRestVerifier } from '../auth/jwt.js';
import { BridgeError, isBridgeError } from '../errors.js';
import { createLogger, type Logger } from '../log.js';
import { registerEmulatorCalls } from './calls.js';
import type { DialPlan } from './dial-plan.js';
import { MessagingEmulator, type MessagingOptions } from './messaging/emulator.js';
import { registerProviderApi } from './provider-api.js';
import { EmulatorState, type ExternalSessionLookup } from './state.js';

export interface EmulatorOptions {
  /** HS256 secret the emulator verifies bearer tokens with (its "provider credentials"). */
  readonly jwtSecret: string;
  readonly dialPlan?: DialPlan;
  /** How long NOANSWER rings before the dial times out: the provider's default is 20 s. */
  readonly dialTimeoutMs?: number;
  readonly lookupSession?: ExternalSessionLookup;
  readonly acceptAnySession?: boolean;
  readonly log?: Logger;
  /** The messaging APIs: default API key, review, delivery and webhook settings. */
  readonly messaging?: MessagingOptions;
}

export interface Emulator {
  readonly app: FastifyInstance;
  readonly state: EmulatorState;
  /** The messaging APIs' state and controls (as the control API under /emulator/messaging/). */
  readonly messaging: MessagingEmulator;
  /** Resolves to the bound address, e.g. `http://127.0.0.1:9090`. */
  listen(port: number, host?: string): Promise<string>;
  close(): Promise<void>;
}

export const DEFAULT_DIAL_TIMEOUT_MS = 20_000;

export async function createEmulator(options: EmulatorOptions): Promise<Emulator> {
  const log = options.log ?? createLogger('info').child({ component: 'emulator' });
  const state = new EmulatorState();
  const verify = createRestVerifier({ secret: options.jwtSecret, jwksUrl: undefined });
  const shutdown = new AbortController();

  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // Dials may be held open well past 25 s on purpose (a dial plan's afterMs is honoured as given).
    requestTimeout: 0,
    bodyLimit: 64 * 1024,
    // close() ends idle keep-alive connections at once instead of waiting for clients to drop them, so
    // a test or `npm start` shutting the emulator down is not held up by the bridge's pooled sockets.
    forceCloseConnections: true,
  });
  app.setErrorHandler((err, req, reply) => {
    if (isBridgeError(err)) return reply.code(err.status).send(err.toBody());
    const e = err as { statusCode?: number; message: string };
    if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500) {
      return reply.code(e.statusCode).send(new BridgeError('bad_request', e.message).toBody());
    }
    req.log.error({ err }, 'emulator request failed');
    // The provider answers a call it could not place with 500 "could not place the call".
    return reply.code(500).send(new BridgeError('internal', 'could not place the call').toBody());
  });
  app.setNotFoundHandler((req, reply) =>
    reply
      .code(404)
      .send(new BridgeError('not_found', `no route ${req.method} ${req.url.split('?')[0]}`).toBody()),
  );

  app.get('/healthz', async () => ({ status: 'ok' }));
  registerProviderApi(app, {
    state,
    verify,
    dialPlan: options.dialPlan ?? new Map(),
    dialTimeoutMs: options.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS,
    lookupSession: options.lookupSession,
    acceptAnySession: options.acceptAnySession ?? false,
    signal: shutdown.signal,
  });
  const calls = registerEmulatorCalls(app, { state, verify, log, signal: shutdown.signal });
  const messaging = new MessagingEmulator(options.messaging ?? {}, verify, log);
  messaging.register(app);

  return {
    app,
    state,
    messaging,
    async listen(port, host = '127.0.0.1') {
      await app.listen({ port, host });
      const addr = app.server.address();
      if (addr === null || typeof addr === 'string') return String(addr);
      const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      return `http://${h}:${addr.port}`;
    },
    async close() {
      shutdown.abort();
      await messaging.close();
      await calls.settle();
      await app.close();
    },
  };
}
