/**
 * The Deepgram Voice Agent stand-in: `/v1/agent/converse` upgrades to a WebSocket speaking the agent
 * protocol (connection.ts). The key goes as `Authorization: Token <key>` (or `Bearer <token>`), or, from
 * a browser, as the subprotocols `token`, `<key>`; a missing or wrong one is refused at the handshake
 * with 401 and Deepgram's error body. @deepgram/sdk's client reaches it with
 * `baseUrl: 'ws://127.0.0.1:<port>'`. The control API is under `/emulator/deepgram-agent/`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../../log.js';
import { createStandInHost, type StandInHost } from '../s2s/host.js';
import { type AgentOptions, DeepgramAgentConnection } from './connection.js';

export const AGENT_PATH = '/v1/agent/converse';

export interface DeepgramAgentEmulatorOptions extends Partial<AgentOptions> {
  /** The one key accepted; by default any non-empty one. */
  readonly apiKey?: string;
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  readonly maxPayloadBytes?: number;
  readonly log?: Logger;
}

export interface DeepgramAgentEmulator extends StandInHost {
  sessions(): DeepgramAgentConnection[];
  session(id: string): DeepgramAgentConnection | undefined;
  waitForSession(n?: number, timeoutMs?: number): Promise<DeepgramAgentConnection>;
  /** The agent WebSocket URL, e.g. `ws://127.0.0.1:9595/v1/agent/converse`. */
  wsUrl(): string;
}

export const AGENT_DEFAULTS: AgentOptions = {
  replyMs: 1500,
  chunkMs: 20,
  outputRateFactor: 4,
  leadMs: 0,
  turnSilenceMs: 500,
  settingsDelayMs: 0,
  idleTimeoutMs: 10_000,
  maxSessionMs: 2 * 3600_000,
  lateAudioChunks: 0,
};

/** Deepgram's error body for a refused handshake. */
function deepgramError(status: number, message?: string): string {
  const codes: Record<number, string> = {
    401: 'INVALID_AUTH',
    402: 'ASR_PAYMENT_REQUIRED',
    429: 'TOO_MANY_REQUESTS',
  };
  return JSON.stringify({
    err_code: codes[status] ?? 'REQUEST_FAILED',
    err_msg: message ?? `The stand-in refused this connection (${status}).`,
    request_id: randomUUID(),
  });
}

/** How a handshake carried its key: `Authorization: Token|Bearer <k>` or the browser's subprotocol pair. */
export type KeyCarrier = 'token' | 'bearer' | 'subprotocol';

/** The credential a handshake carries, and how. */
function credentialOf(req: IncomingMessage): { key: string | undefined; via: KeyCarrier } | undefined {
  const auth = req.headers.authorization;
  if (auth !== undefined) {
    const m = /^(Token|Bearer)\s+(\S+)$/i.exec(auth);
    return { key: m?.[2], via: m?.[1]?.toLowerCase() === 'bearer' ? 'bearer' : 'token' };
  }
  const protocols = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  const at = protocols.findIndex((p) => p === 'token' || p === 'bearer');
  return at >= 0 ? { key: protocols[at + 1], via: 'subprotocol' } : undefined;
}

export function createDeepgramAgentEmulator(
  options: DeepgramAgentEmulatorOptions = {},
): DeepgramAgentEmulator {
  const agentOptions: AgentOptions = {
    ...AGENT_DEFAULTS,
    ...Object.fromEntries(Object.entries(options).filter(([k, v]) => k in AGENT_DEFAULTS && v !== undefined)),
  };
  const host = createStandInHost({
    name: 'deepgram-agent',
    maxPayloadBytes: options.maxPayloadBytes ?? 16 * 1024 * 1024,
    ...(options.tls ? { tls: options.tls } : {}),
    ...(options.log ? { log: options.log } : {}),
    refusalBody: (status) => deepgramError(status),
    // A browser's key rides as the subprotocols `token`, `<key>`: the server answers with `token`.
    handleProtocols: (protocols) =>
      protocols.has('token') ? 'token' : protocols.has('bearer') ? 'bearer' : false,
    route: () => false,
    accept: (req, url) => {
      if (url.pathname !== AGENT_PATH) return undefined;
      const credential = credentialOf(req);
      const key = credential?.key;
      if (key === undefined || key === '' || (options.apiKey !== undefined && key !== options.apiKey))
        return { refuse: { status: 401, body: deepgramError(401, 'Invalid credentials.') } };
      return {
        accept: (ws) => {
          const conn = new DeepgramAgentConnection(ws, agentOptions);
          conn.record.key_via = credential!.via;
          return conn;
        },
      };
    },
  });
  return {
    ...host,
    sessions: () => host.sessions() as DeepgramAgentConnection[],
    session: (id) => host.session(id) as DeepgramAgentConnection | undefined,
    waitForSession: async (n, timeoutMs) =>
      (await host.waitForSession(n, timeoutMs)) as DeepgramAgentConnection,
    wsUrl: () => `${host.base().replace(/^http/, 'ws')}${AGENT_PATH}`,
  };
}
