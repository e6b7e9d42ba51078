/**
 * Typed client of the provider's voice REST API, on undici.
 *
 * Failure mapping, each message naming the provider call that failed:
 * - no answer within the read bound -> 504 upstream_timeout
 * - connection refused, unknown host, connect timeout -> 503 upstream_unavailable (also a provider 503)
 * - malformed JSON, wrong shape, unexpected status -> 502 upstream_bad_answer
 * - provider 400/404/409 -> passed through with the provider's message
 * - provider 500 ("could not place the call") -> retried once, then 502
 */
import { BridgeError, type ErrorCode } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { type CallTrace, createAgent, exchange, observeCall } from './http.js';
import {
  type CheckedCall,
  type ConferenceRequest,
  type ConferenceResult,
  type ConsultRequest,
  type ConsultResult,
  checkConferenceResult,
  checkConsultResult,
  checkMediaStreamConfig,
  checkSession,
  checkSessionList,
  type MediaStreamUpsert,
  type ProviderMediaStreamConfig,
  type ProviderSession,
} from './types.js';

export interface ProviderClientOptions {
  /** Base address including the version segment, e.g. `https://voice.example/v1`. */
  readonly baseUrl: string;
  readonly token: string | undefined;
  /** TCP (and TLS) connect bound: a provider that cannot be reached fails fast with 503. */
  readonly connectTimeoutMs: number;
  /**
   * Bound on one whole call, both attempts included. The provider's consult blocks up to 20 s + 5 s,
   * so this is at least 30 s in production (config enforces it); tests pass a short one.
   */
  readonly readTimeoutMs: number;
  /** Pause before the one retry of a provider 500. */
  readonly retryDelayMs?: number;
  readonly metrics?: Metrics;
  /** Failed calls are logged here (call, outcome, status, duration; never bodies, which may hold secrets). */
  readonly log?: Logger;
}

export interface ProviderClient {
  getMediaStream(): Promise<ProviderMediaStreamConfig>;
  putMediaStream(upsert: MediaStreamUpsert): Promise<ProviderMediaStreamConfig>;
  listSessions(): Promise<ProviderSession[]>;
  getSession(sessionId: string): Promise<ProviderSession>;
  consult(sessionId: string, body: ConsultRequest): Promise<ConsultResult>;
  conference(sessionId: string, body: ConferenceRequest): Promise<ConferenceResult>;
  close(): Promise<void>;
}

/** Statuses whose provider message reaches the bridge's caller unchanged. */
const PASS_THROUGH: Readonly<Record<number, ErrorCode>> = {
  400: 'bad_request',
  404: 'not_found',
  409: 'conflict',
};

export function createProviderClient(options: ProviderClientOptions): ProviderClient {
  const base = options.baseUrl.replace(/\/+$/, '');
  const retryDelayMs = options.retryDelayMs ?? 250;
  const agent = createAgent(options);

  function call<T>(c: CheckedCall, method: string, path: string, body?: unknown): Promise<T> {
    return observeCall(options, c.name, async (trace) => {
      const deadline = performance.now() + options.readTimeoutMs;
      for (let attempt = 1; ; attempt++) {
        const result = await attemptOnce(c, method, path, body, deadline, trace);
        if (result.kind === 'value') return result.value as T;
        // A provider 500: retry once if there is time left for it.
        if (attempt === 1 && deadline - performance.now() > retryDelayMs) {
          await new Promise((r) => setTimeout(r, retryDelayMs));
          continue;
        }
        throw new BridgeError(
          'upstream_bad_answer',
          `provider ${c.name} failed twice with status 500${result.message ? `: ${result.message}` : ''}`,
        );
      }
    });
  }

  type Attempt = { kind: 'value'; value: unknown } | { kind: 'retry'; message: string };

  async function attemptOnce(
    c: CheckedCall,
    method: string,
    path: string,
    body: unknown,
    deadline: number,
    trace: CallTrace,
  ): Promise<Attempt> {
    const res = await exchange(agent, c.name, options, {
      method: method as 'GET' | 'PUT' | 'POST',
      url: `${base}${path}`,
      token: options.token,
      body,
      deadline,
    });
    const text = res.text;
    const status = res.status;
    trace.status = status;
    if (status >= 200 && status < 300) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        throw new BridgeError('upstream_bad_answer', `provider ${c.name} answered with malformed JSON`);
      }
      const why = c.check(value);
      if (why !== undefined) {
        throw new BridgeError(
          'upstream_bad_answer',
          `provider ${c.name} answered with a bad ${c.shape}: ${why}`,
        );
      }
      return { kind: 'value', value };
    }
    const message = withoutSecret(providerMessage(text), body);
    if (status === 500) return { kind: 'retry', message };
    const passCode = PASS_THROUGH[status];
    if (passCode !== undefined) {
      throw new BridgeError(passCode, message || `provider ${c.name} answered ${status}`);
    }
    if (status === 503) {
      throw new BridgeError(
        'upstream_unavailable',
        `provider ${c.name} is unavailable (503)${message ? `: ${message}` : ''}`,
      );
    }
    if (status === 401 || status === 403) {
      throw new BridgeError(
        'upstream_bad_answer',
        `provider ${c.name} refused the bridge's credentials (${status}): check PROVIDER_TOKEN`,
      );
    }
    throw new BridgeError(
      'upstream_bad_answer',
      `provider ${c.name} answered an unexpected status ${status}`,
    );
  }

  const enc = encodeURIComponent;
  return {
    getMediaStream: () => call(MEDIA_GET, 'GET', '/media-stream'),
    putMediaStream: (upsert) => call(MEDIA_PUT, 'PUT', '/media-stream', upsert),
    listSessions: () => call(SESSIONS, 'GET', '/sessions'),
    getSession: (id) => call(SESSION, 'GET', `/sessions/${enc(id)}`),
    consult: (id, body) => call(CONSULT, 'POST', `/sessions/${enc(id)}/consult`, body),
    conference: (id, body) => call(CONFERENCE, 'POST', `/sessions/${enc(id)}/conference`, body),
    close: () => agent.close(),
  };
}

const MEDIA_GET: CheckedCall = {
  name: 'media-stream read',
  shape: 'MediaStreamConfig',
  check: checkMediaStreamConfig,
};
const MEDIA_PUT: CheckedCall = {
  name: 'media-stream upsert',
  shape: 'MediaStreamConfig',
  check: checkMediaStreamConfig,
};
const SESSIONS: CheckedCall = { name: 'session list', shape: 'Session list', check: checkSessionList };
const SESSION: CheckedCall = { name: 'session read', shape: 'Session', check: checkSession };
const CONSULT: CheckedCall = { name: 'consult', shape: 'ConsultResult', check: checkConsultResult };
const CONFERENCE: CheckedCall = {
  name: 'conference',
  shape: 'ConferenceResult',
  check: checkConferenceResult,
};

/** The provider's message with any echo of the media_secret it was sent taken out: the message is passed
 * through and logged, and a provider may quote the request body. */
function withoutSecret(message: string, body: unknown): string {
  const secret = (body as { media_secret?: unknown } | undefined)?.media_secret;
  return typeof secret === 'string' && secret !== '' ? message.replaceAll(secret, '[redacted]') : message;
}

/** The `message` of a provider error body, if it has one. */
function providerMessage(text: string): string {
  try {
    const v = JSON.parse(text) as { message?: unknown };
    if (typeof v.message === 'string') return v.message;
  } catch {}
  return '';
}
