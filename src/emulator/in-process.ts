/**
 * `npm start` without `PROVIDER_BASE_URL`: the provider emulator runs inside the bridge's process on a
 * loopback port and serves as the provider, so consult, conference and media-stream registration work in
 * development. It takes call control for the calls the bridge holds (including ones placed with
 * `npm run call`). Never in production: the caller refuses that before getting here.
 */
import { randomBytes } from 'node:crypto';
import { mintToken } from '../auth/jwt.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { createEmulator, type Emulator } from './server.js';
import type { ExternalSessionLookup } from './state.js';

export interface InProcessProvider {
  /** The config with `providerBaseUrl` and `providerToken` pointing at the emulator. */
  readonly config: Config;
  readonly emulator: Emulator;
  /** The emulator's own address (its `/emulator/calls` places synthetic calls). */
  readonly url: string;
  /** The emulator accepts tokens signed with this (the bridge's REST secret when it has one). */
  readonly secretIsBridgeSecret: boolean;
}

/** The line that says plainly where call control goes. */
export const IN_PROCESS_NOTICE =
  'PROVIDER_BASE_URL is not set: call control and media-stream registration go to the built-in provider emulator (development only)';

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
  const providerToken = await mintToken({
    secret: jwtSecret,
    scopes: ['media:manage', 'sessions:read', 'calls:control'],
    ttlSeconds: 10 * 365 * 24 * 3600,
  });
  return {
    config: Object.freeze({ ...config, providerBaseUrl: `${url}/v1`, providerToken }),
    emulator,
    url,
    secretIsBridgeSecret,
  };
}
