/**
 * The ElevenLabs Agents stand-in: the conversation WebSocket `/v1/convai/conversation?agent_id=...` and
 * the signed-URL route `GET /v1/convai/conversation/get-signed-url?agent_id=...` (header `xi-api-key`;
 * the underscore spelling `get_signed_url` too, which many integrations call), whose `signed_url` carries
 * a `conversation_signature` the WebSocket then checks (valid 15 minutes, for that agent only). A private
 * agent is reachable only that way; a public one by its id alone. The browser client's `convai`
 * subprotocol is accepted. The control API is under `/emulator/elevenlabs-agent/`.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../log.js';
import { replyJson } from '../s2s/control.js';
import { createStandInHost, type StandInHost } from '../s2s/host.js';
import { type AgentConfig, type ConversationOptions, ElevenLabsConversation } from './connection.js';

export type { AgentConfig } from './connection.js';

export const CONVERSATION_PATH = '/v1/convai/conversation';
export const SIGNED_URL_PATHS = [
  '/v1/convai/conversation/get-signed-url',
  '/v1/convai/conversation/get_signed_url',
];

export interface ElevenLabsEmulatorOptions extends Partial<ConversationOptions> {
  /** The one `xi-api-key` the signed-URL route accepts; by default any non-empty key. */
  readonly apiKey?: string;
  /** Agents by id; an id not listed gets `defaultAgent` unless `onlyListedAgents`. */
  readonly agents?: Readonly<Record<string, AgentConfig>>;
  readonly defaultAgent?: AgentConfig;
  /** Unknown agent ids are refused (404) instead of getting `defaultAgent`. */
  readonly onlyListedAgents?: boolean;
  /** How long a signed URL stays valid; default 15 minutes. */
  readonly signedUrlTtlMs?: number;
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  readonly maxPayloadBytes?: number;
  readonly log?: Logger;
}

export interface ElevenLabsEmulator extends StandInHost {
  sessions(): ElevenLabsConversation[];
  session(id: string): ElevenLabsConversation | undefined;
  waitForSession(n?: number, timeoutMs?: number): Promise<ElevenLabsConversation>;
  /** The WebSocket URL of a public agent, e.g. `ws://127.0.0.1:9292/v1/convai/conversation?agent_id=a`. */
  wsUrl(agentId: string): string;
}

export const CONVERSATION_DEFAULTS: ConversationOptions = {
  replyMs: 1500,
  chunkMs: 100,
  outputRateFactor: 4,
  leadMs: 0,
  pingIntervalMs: 3000,
  pongTimeoutMs: 1000,
  maxMissedPongs: 1,
  lateAudioChunks: 0,
  replyTurnAfterInterruption: 'same',
  interruptionEventId: 'turn',
  turnSilenceMs: 500,
  initiationTimeoutMs: 3000,
};

/** An error body in the API's shape: `{detail: {status, message}}`. */
function errorBody(status: string, message: string): string {
  return JSON.stringify({ detail: { status, message } });
}

const STATUS_WORDS: Record<number, string> = {
  401: 'invalid_api_key',
  403: 'forbidden',
  404: 'not_found',
  429: 'too_many_concurrent_requests',
};

export function createElevenLabsEmulator(options: ElevenLabsEmulatorOptions = {}): ElevenLabsEmulator {
  const conv: ConversationOptions = {
    ...CONVERSATION_DEFAULTS,
    ...Object.fromEntries(
      Object.entries(options).filter(([k, v]) => k in CONVERSATION_DEFAULTS && v !== undefined),
    ),
  };
  const ttlMs = options.signedUrlTtlMs ?? 15 * 60_000;
  const signatures = new Map<string, { agentId: string; expiresAt: number; conversationId?: string }>();
  const agentOf = (id: string): AgentConfig | undefined =>
    options.agents?.[id] ?? (options.onlyListedAgents === true ? undefined : (options.defaultAgent ?? {}));

  const route = (req: IncomingMessage, res: ServerResponse, base: () => string): boolean => {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    if (!SIGNED_URL_PATHS.includes(url.pathname)) return false;
    const fail = (status: number, word: string, message: string) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(errorBody(word, message));
    };
    if (req.method !== 'GET') {
      fail(405, 'method_not_allowed', `Use GET ${url.pathname}?agent_id=...`);
      return true;
    }
    const key = req.headers['xi-api-key'];
    if (typeof key !== 'string' || key === '') {
      fail(401, 'needs_authorization', 'The xi-api-key header is missing.');
      return true;
    }
    if (options.apiKey !== undefined && key !== options.apiKey) {
      fail(401, 'invalid_api_key', 'Invalid API key.');
      return true;
    }
    const agentId = url.searchParams.get('agent_id');
    if (agentId === null || agentId === '') {
      fail(422, 'missing_agent_id', 'The query parameter agent_id is required.');
      return true;
    }
    if (agentOf(agentId) === undefined) {
      fail(404, 'agent_not_found', `Agent ${agentId} was not found.`);
      return true;
    }
    const signature = randomBytes(24).toString('base64url');
    const withId = url.searchParams.get('include_conversation_id') === 'true';
    const conversationId = withId ? newConversationId() : undefined;
    signatures.set(signature, {
      agentId,
      expiresAt: Date.now() + ttlMs,
      ...(conversationId !== undefined ? { conversationId } : {}),
    });
    const signed = new URL(`${base().replace(/^http/, 'ws')}${CONVERSATION_PATH}`);
    signed.searchParams.set('agent_id', agentId);
    signed.searchParams.set('conversation_signature', signature);
    if (conversationId !== undefined) signed.searchParams.set('conversation_id', conversationId);
    replyJson(res, 200, { signed_url: signed.toString() });
    return true;
  };

  const host = createStandInHost({
    name: 'elevenlabs-agent',
    maxPayloadBytes: options.maxPayloadBytes ?? 16 * 1024 * 1024,
    ...(options.tls ? { tls: options.tls } : {}),
    ...(options.log ? { log: options.log } : {}),
    // The browser client asks for `convai` (and `bearer.<token>`); the server picks `convai`.
    handleProtocols: (protocols) => (protocols.has('convai') ? 'convai' : false),
    refusalBody: (status) =>
      errorBody(STATUS_WORDS[status] ?? 'error', `The stand-in refused this connection (${status}).`),
    route,
    accept: (_req, url) => {
      if (url.pathname !== CONVERSATION_PATH) return undefined;
      const agentId = url.searchParams.get('agent_id');
      if (agentId === null || agentId === '')
        return { refuse: { status: 400, body: errorBody('missing_agent_id', 'agent_id is required.') } };
      const agent = agentOf(agentId);
      if (agent === undefined)
        return {
          refuse: { status: 404, body: errorBody('agent_not_found', `Agent ${agentId} was not found.`) },
        };
      const signature = url.searchParams.get('conversation_signature');
      let conversationId: string | undefined;
      if (signature !== null) {
        const signed = signatures.get(signature);
        if (signed === undefined || signed.expiresAt < Date.now() || signed.agentId !== agentId)
          return {
            refuse: {
              status: 403,
              body: errorBody(
                'invalid_signature',
                signed === undefined || signed.agentId !== agentId
                  ? 'The conversation signature is not valid for this agent.'
                  : 'The conversation signature has expired.',
              ),
            },
          };
        conversationId = signed.conversationId;
      } else if (agent.private === true) {
        return {
          refuse: {
            status: 403,
            body: errorBody(
              'authorization_required',
              `Agent ${agentId} is private: connect with a signed URL from get-signed-url.`,
            ),
          },
        };
      }
      return {
        accept: (ws) =>
          new ElevenLabsConversation(ws, agentId, conversationId ?? newConversationId(), agent, conv),
      };
    },
  });

  return {
    ...host,
    sessions: () => host.sessions() as ElevenLabsConversation[],
    session: (id) => host.session(id) as ElevenLabsConversation | undefined,
    waitForSession: async (n, timeoutMs) =>
      (await host.waitForSession(n, timeoutMs)) as ElevenLabsConversation,
    wsUrl: (agentId) =>
      `${host.base().replace(/^http/, 'ws')}${CONVERSATION_PATH}?agent_id=${encodeURIComponent(agentId)}`,
  };
}

function newConversationId(): string {
  return `conv_${randomBytes(13).toString('hex')}`;
}
