/**
 * The Gemini Live stand-in: `/ws/google.ai.generativelanguage.{v1|v1beta|v1alpha}.GenerativeService.
 * BidiGenerateContent` upgrades to a WebSocket speaking the Live API (connection.ts), the key as `?key=`
 * or the `x-goog-api-key` header (`BidiGenerateContentConstrained?access_token=` for ephemeral tokens).
 * A wrong or missing key is let through the handshake and closed with 1007 "API key not valid", as
 * Google does. js-genai's client reaches it with `httpOptions: { baseUrl: 'http://127.0.0.1:<port>' }`.
 * The resumption handles of every conversation are kept here, so a new connection can resume one; the
 * control API is under `/emulator/gemini-live/`.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../../log.js';
import { createStandInHost, type StandInHost } from '../s2s/host.js';
import { GeminiConnection, type LiveConversation, type LiveHandles, type LiveOptions } from './connection.js';
import type { LiveRecord } from './record.js';

const WS_PATH =
  /^\/ws\/google\.ai\.generativelanguage\.(v1|v1alpha|v1beta)\.GenerativeService\.(BidiGenerateContent|BidiGenerateContentConstrained)$/;

export interface GeminiLiveEmulatorOptions extends Partial<LiveOptions> {
  /** The one API key (or access token) accepted; by default any non-empty one. */
  readonly apiKey?: string;
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  readonly maxPayloadBytes?: number;
  readonly log?: Logger;
}

export interface GeminiLiveEmulator extends StandInHost {
  sessions(): GeminiConnection[];
  session(id: string): GeminiConnection | undefined;
  waitForSession(n?: number, timeoutMs?: number): Promise<GeminiConnection>;
  /** The WebSocket URL with a key, e.g. `ws://127.0.0.1:9494/ws/...BidiGenerateContent?key=K`. */
  wsUrl(key?: string): string;
}

export const LIVE_DEFAULTS: LiveOptions = {
  replyMs: 1500,
  chunkMs: 40,
  outputRateFactor: 4,
  leadMs: 0,
  turnSilenceMs: 500,
  setupDelayMs: 0,
  connectionMs: 600_000,
  goAwayLeadMs: 60_000,
  jsonFrames: 'binary',
  refuseResumeWhileOpen: false,
};

/** Google's error body, for a handshake the control API refuses. */
function googleError(status: number): string {
  const names: Record<number, string> = {
    400: 'INVALID_ARGUMENT',
    401: 'UNAUTHENTICATED',
    403: 'PERMISSION_DENIED',
    429: 'RESOURCE_EXHAUSTED',
    503: 'UNAVAILABLE',
  };
  return JSON.stringify({
    error: {
      code: status,
      message: `The stand-in refused this connection (${status}).`,
      status: names[status] ?? 'UNKNOWN',
    },
  });
}

export function createGeminiLiveEmulator(options: GeminiLiveEmulatorOptions = {}): GeminiLiveEmulator {
  const liveOptions: LiveOptions = {
    ...LIVE_DEFAULTS,
    ...Object.fromEntries(Object.entries(options).filter(([k, v]) => k in LIVE_DEFAULTS && v !== undefined)),
  };
  const conversations = new Map<string, LiveConversation>();
  const handles: LiveHandles = {
    issue(conversation) {
      const handle = randomBytes(24).toString('base64url');
      conversations.set(handle, conversation);
      return handle;
    },
    find: (handle) => conversations.get(handle),
  };

  /** Where the handshake's key came from, and the close it gets when the key is not valid. */
  const keyCheck = (
    req: IncomingMessage,
    url: URL,
    constrained: boolean,
  ): { via: LiveRecord['key_via']; error: string | undefined } => {
    const header = req.headers['x-goog-api-key'];
    const param = constrained ? 'access_token' : 'key';
    const query = url.searchParams.get(param);
    const key = query ?? (typeof header === 'string' ? header : null);
    const via = query !== null ? param : key !== null ? 'x-goog-api-key' : null;
    if (key === null || key === '' || (options.apiKey !== undefined && key !== options.apiKey))
      return { via, error: 'API key not valid. Please pass a valid API key.' };
    return { via, error: undefined };
  };

  const host = createStandInHost({
    name: 'gemini-live',
    maxPayloadBytes: options.maxPayloadBytes ?? 16 * 1024 * 1024,
    ...(options.tls ? { tls: options.tls } : {}),
    ...(options.log ? { log: options.log } : {}),
    refusalBody: googleError,
    route: () => false,
    accept: (req) => {
      // js-genai joins a base URL ending in '/' to '/ws/...', so the path starts '//'; Google takes it.
      const url = new URL((req.url ?? '/').replace(/^\/{2,}/, '/'), 'http://stand-in');
      const m = WS_PATH.exec(url.pathname);
      if (m === null) return undefined;
      const key = keyCheck(req, url, m[2] === 'BidiGenerateContentConstrained');
      return {
        accept: (ws) => {
          const conn = new GeminiConnection(ws, `${m[1]}.${m[2]}`, liveOptions, handles, key.error);
          conn.record.key_via = key.via;
          return conn;
        },
      };
    },
  });

  return {
    ...host,
    sessions: () => host.sessions() as GeminiConnection[],
    session: (id) => host.session(id) as GeminiConnection | undefined,
    waitForSession: async (n, timeoutMs) => (await host.waitForSession(n, timeoutMs)) as GeminiConnection,
    wsUrl: (key = 'stand-in-key') =>
      `${host.base().replace(/^http/, 'ws')}/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent?key=${encodeURIComponent(key)}`,
  };
}
