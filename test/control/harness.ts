/**
 * Loopback fixtures for the control-plane tests: a real provider emulator and a real bridge pointed at
 * it (the test rig, test/helpers/rig.ts, with this file's secrets and dial plan), with real JWTs and the
 * bridge's log lines captured for searching.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Bridge } from '../../src/app.js';
import { mintToken } from '../../src/auth/jwt.js';
import type { Config } from '../../src/config.js';
import { parseDialPlan } from '../../src/emulator/dial-plan.js';
import { call as httpCall, type JsonAnswer } from '../helpers/http-call.js';
import { type InProcessRig, startRig as startTestRig } from '../helpers/rig.js';

export const AUTH_SECRET = 'control-test-auth-secret';
export const EMULATOR_SECRET = 'control-test-emulator-secret';
export const MEDIA_SECRET = 'control-test-media-secret';

export const ALL_SCOPES = ['media:manage', 'sessions:read', 'calls:control'];

export function restToken(scopes: string[], tenant?: string, secret = AUTH_SECRET): Promise<string> {
  return mintToken({ secret, scopes, ...(tenant !== undefined ? { tenant } : {}) });
}

export const TEST_DIAL_PLAN = {
  '100': { dialStatus: 'ANSWER', afterMs: 50 },
  '200': { dialStatus: 'BUSY', afterMs: 50 },
  '300': { dialStatus: 'CONGESTION', afterMs: 50 },
  '400': { dialStatus: 'CHANUNAVAIL', afterMs: 50 },
  '500': { dialStatus: 'NOANSWER' },
  '2400': { dialStatus: 'ANSWER', afterMs: 24_000 },
  '9000': { dialStatus: 'ANSWER', afterMs: 60_000 },
};

/** A bridge and its emulator (rig.ts), every log line it wrote in `logs`. */
export type Rig = InProcessRig;

export interface RigOptions {
  /** Provider base URL (with `/v1`); default: a fresh emulator's. `null`: no provider configured. */
  readonly providerUrl?: string | null;
  readonly config?: Partial<Config>;
  readonly env?: Record<string, string>;
  readonly dialTimeoutMs?: number;
  /** Level of the captured logs (default debug); the secrets test captures trace. */
  readonly logLevel?: string;
}

/** A bridge on 127.0.0.1:0 with an emulator as its provider (unless told otherwise): the rig, with this file's secrets. */
export async function startRig(o: RigOptions = {}): Promise<Rig> {
  const own = o.providerUrl === undefined;
  return startTestRig({
    env: {
      LOG_LEVEL: 'debug',
      DSP_WORKERS: '0',
      AUTH_JWT_SECRET: AUTH_SECRET,
      MEDIA_SECRET,
      ...(typeof o.providerUrl === 'string'
        ? {
            PROVIDER_BASE_URL: o.providerUrl,
            PROVIDER_TOKEN: await mintToken({ secret: EMULATOR_SECRET, scopes: ALL_SCOPES }),
          }
        : {}),
      ...o.env,
    },
    ...(o.config === undefined ? {} : { config: o.config }),
    ...(own
      ? {
          providers: {
            voice: {
              jwtSecret: EMULATOR_SECRET,
              dialPlan: parseDialPlan(TEST_DIAL_PLAN),
              dialTimeoutMs: o.dialTimeoutMs ?? 300,
            },
          },
        }
      : {}),
    log: o.logLevel ?? 'debug',
  });
}

/** Registers a live session on the bridge, as the media endpoint does on session_start. */
export async function holdSession(bridge: Bridge, id: string, tenant = 'default'): Promise<void> {
  await bridge.ctx.sessions.add({
    session_id: id,
    tenant,
    customer_phone: '15550199',
    direction: 'inbound',
    started_at: new Date().toISOString(),
    conferenceNumbers: [],
  });
}

export type { JsonAnswer };

/** One real HTTP request over loopback, bounded at 60 s. */
export function call(
  base: string,
  method: string,
  path: string,
  o: { token?: string; body?: unknown } = {},
): Promise<JsonAnswer> {
  return httpCall(base, method, path, { timeoutMs: 60_000, ...o });
}

/** A tiny real HTTP server answering every request with `handler` (given the request body); counts requests. */
export async function tinyServer(
  handler: (req: IncomingMessage, res: ServerResponse, n: number, body: string) => void,
): Promise<{ url: string; requests: () => number; close(): Promise<void> }> {
  let n = 0;
  const server: Server = createServer((req, res) => {
    n++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, res, n, Buffer.concat(chunks).toString('utf8')));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => n,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A loopback port nothing listens on. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}
