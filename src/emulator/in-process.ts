/**
 * `npm start` without `PROVIDER_BASE_URL` or without `MESSAGING_BASE_URL`: the provider emulator runs
 * inside the bridge's process on a loopback port and serves as the provider for what is not configured,
 * so consult, conference, media-stream registration and messaging work in development. It takes call
 * control for the calls the bridge holds (including ones placed with `npm run call`), and posts its
 * messaging webhooks to the bridge once the bridge listens. Never in production: the caller refuses that
 * before getting here, and imports this module only on that path, so a production process never loads
 * src/emulator/.
 */
import { randomBytes } from 'node:crypto';
import { mintToken } from '../auth/jwt.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { createEmulator, type Emulator } from './server.js';
import type { ExternalSessionLookup } from './state.js';

export interface InProcessProvider {
  /** The config with what was not configured (voice, messaging) pointing at the emulator. */
  readonly config: Config;
  readonly emulator: Emulator;
  /** The emulator's own address (its `/emulator/calls` places synthetic calls). */
  readonly url: string;
  /** The emulator accepts tokens signed with this (the bridge's REST secret when it has one). */
  readonly secretIsBridgeSecret: boolean;
  /** The emulator stands in for the voice API (PROVIDER_BASE_URL was not set). */
  readonly voice: boolean;
  /** The emulator stands in for the messaging API (MESSAGING_BASE_URL was not set). */
  readonly messaging: boolean;
  /** One line for each part the emulator stands in for, saying plainly where its traffic goes. */
  readonly notices: readonly string[];
  /**
   * Points the emulator's messaging webhooks at the bridge listening at `bridgeUrl`, with the bridge's
   * webhook secret as their bearer token; answers the webhook URL (undefined when the emulator does not
   * stand in for messaging).
   */
  connectWebhooks(bridgeUrl: string): string | undefined;
}

/** The line that says plainly where call control goes. */
export const IN_PROCESS_NOTICE =
  'PROVIDER_BASE_URL is not set: call control and media-stream registration go to the built-in provider emulator (development only)';

/** The line that says plainly where messages go. */
export const IN_PROCESS_MESSAGING_NOTICE =
  'MESSAGING_BASE_URL is not set: chat and RCS messages go to the built-in provider emulator (development only; nothing reaches a phone)';

export async function startInProcessProvider(
  config: Config,
  log: Logger,
  lookupSession: ExternalSessionLookup,
): Promise<InProcessProvider> {
  // With an HS256 REST secret, `npm run token` tokens work against the emulator's own routes too.
  const secretIsBridgeSecret = config.authJwtSecret !== undefined;
  const jwtSecret = config.authJwtSecret ?? randomBytes(32).toString('base64url');
  const emulator = await createEmulator({
    jwtSecret,
    lookupSession,
    log: log.child({ component: 'emulator' }),
  });
  const url = await emulator.listen(0, '127.0.0.1');
  const voice = config.providerBaseUrl === undefined;
  const messaging = config.messagingBaseUrl === undefined;
  const providerToken = voice
    ? await mintToken({
        secret: jwtSecret,
        scopes: ['media:manage', 'sessions:read', 'calls:control'],
        ttlSeconds: 10 * 365 * 24 * 3600,
      })
    : undefined;
  // The emulator's messaging API takes a JWT as a session token: tenant "default" is its default account.
  const messagingToken = messaging
    ? await mintToken({ secret: jwtSecret, scopes: [], ttlSeconds: 10 * 365 * 24 * 3600 })
    : undefined;
  return {
    config: Object.freeze({
      ...config,
      ...(voice ? { providerBaseUrl: `${url}/v1`, providerToken } : {}),
      ...(messaging ? { messagingBaseUrl: `${url}/v1`, messagingToken } : {}),
    }),
    emulator,
    url,
    secretIsBridgeSecret,
    voice,
    messaging,
    notices: [...(voice ? [IN_PROCESS_NOTICE] : []), ...(messaging ? [IN_PROCESS_MESSAGING_NOTICE] : [])],
    connectWebhooks(bridgeUrl) {
      if (!messaging) return undefined;
      const hook = `${bridgeUrl}/v1/webhooks/messaging`;
      // The secret goes as `Authorization: Bearer`, never in the URL: the emulator's control API (no
      // auth, for development) shows the URL to anyone who asks.
      emulator.messaging.setWebhook(hook, config.messagingWebhookSecret);
      return hook;
    },
  };
}
