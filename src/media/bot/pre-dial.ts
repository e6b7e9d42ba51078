/**
 * The step a bot dialect may take before each dial: an HTTP request to the vendor's API that says where
 * to dial (Ultravox's create-call answers with the call's `joinUrl`; a signed-URL route with a URL that
 * carries its own token). A dialect overrides WsLink's `resolve()` (ws-link.ts), which the link awaits
 * before each dial, bounded by BOT_CONNECT_TIMEOUT_MS and aborted when the call ends; this file holds the
 * request itself, with the rules every such call keeps:
 *
 * - JSON both ways, the answer read whole up to MAX_ANSWER_BYTES;
 * - a failure is a `PreDialError` whose message names the route (scheme, host and path) and the status
 *   or the transport's error code, never the answer's text: an answer may echo what was sent, a key
 *   among it. `detail()` gives a client error's own words for the log, with the secrets it is handed
 *   cut out, where the dialect judges them useful (a 400 naming a bad setting);
 * - the link counts a failure as a refused connection: redialled within BOT_RETRIES, unless `final`
 *   (a URL this bridge may not dial, a key that is not set), which gives up at once.
 */
import { request } from 'undici';
import { displayUrl } from '../../log.js';

/** Where one dial goes: a ws:// or wss:// URL and the upgrade request's headers (never logged). */
export interface DialTarget {
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Largest answer read: a create-call's Call object is a few kilobytes. */
export const MAX_ANSWER_BYTES = 256 * 1024;

/** Longest client-error detail that reaches a log line. */
const DETAIL_CHARS = 300;

export class PreDialError extends Error {
  override readonly name = 'PreDialError';
  /** The HTTP status of the answer; undefined when none came. */
  readonly status: number | undefined;
  /** Redialling cannot help: the link gives up at once. */
  readonly final: boolean;
  /** The answer's text (bounded); for `detail()` only, never in the message. */
  readonly #answer: string | undefined;

  constructor(message: string, o: { status?: number; final?: boolean; answer?: string } = {}) {
    super(message);
    this.status = o.status;
    this.final = o.final === true;
    this.#answer = o.answer;
  }

  /**
   * A client error's own words (400, 404, 409, 422: what was wrong with the request), at most
   * DETAIL_CHARS, with each of `secrets` cut out; undefined for any other answer, and for an
   * authentication refusal, whose words may concern the key itself.
   */
  detail(secrets: readonly (string | undefined)[]): string | undefined {
    if (this.#answer === undefined || ![400, 404, 409, 422].includes(this.status ?? 0)) return undefined;
    let text = this.#answer;
    try {
      const parsed = JSON.parse(text) as unknown;
      if (typeof parsed === 'object' && parsed !== null) {
        const o = parsed as Record<string, unknown>;
        const words = o.detail ?? o.message ?? o.error;
        text = typeof words === 'string' ? words : JSON.stringify(words ?? parsed);
      }
    } catch {}
    for (const s of secrets) if (s !== undefined && s.length >= 4) text = text.replaceAll(s, '[redacted]');
    return text.length > DETAIL_CHARS ? `${text.slice(0, DETAIL_CHARS)}…` : text;
  }
}

export interface JsonRequest {
  readonly method: 'GET' | 'POST';
  readonly url: string;
  /** Sent as they are (an API key among them); never logged. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent as JSON when defined. */
  readonly body?: unknown;
  /** Aborts the request (the link's connect bound, or the call's end). */
  readonly signal: AbortSignal;
}

/**
 * One JSON request and its 2xx answer, parsed. Throws a PreDialError for any other status, an answer
 * that is not JSON, no answer before `signal` aborts, or no connection.
 */
export async function requestJson(o: JsonRequest): Promise<unknown> {
  const route = `${o.method} ${displayUrl(o.url)}`;
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(o.url, {
      method: o.method,
      headers: {
        accept: 'application/json',
        ...(o.body !== undefined && { 'content-type': 'application/json' }),
        ...o.headers,
      },
      body: o.body === undefined ? null : JSON.stringify(o.body),
      signal: o.signal,
    });
  } catch (err) {
    throw transportFailure(route, err, o.signal);
  }
  let text: string;
  try {
    text = await readBounded(res.body);
  } catch (err) {
    throw transportFailure(route, err, o.signal);
  }
  if (res.statusCode < 200 || res.statusCode > 299)
    throw new PreDialError(`${route} answered HTTP ${res.statusCode}`, {
      status: res.statusCode,
      answer: text.slice(0, 4 * DETAIL_CHARS),
    });
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new PreDialError(`${route} answered HTTP ${res.statusCode} with a body that is not JSON`, {
      status: res.statusCode,
    });
  }
}

async function readBounded(body: AsyncIterable<Buffer>): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) throw new Error(`an answer larger than ${MAX_ANSWER_BYTES} bytes`);
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** A failure without an HTTP answer, named by what happened: no answer in time, no connection, or else. */
function transportFailure(route: string, err: unknown, signal: AbortSignal): PreDialError {
  if (signal.aborted) return new PreDialError(`${route} gave no answer in time`);
  const e = err as { code?: string; cause?: { code?: string }; message?: string };
  const code = e.code ?? e.cause?.code;
  if (e.message?.startsWith('an answer larger')) return new PreDialError(`${route} sent ${e.message}`);
  return new PreDialError(`${route} could not be reached${code === undefined ? '' : ` (${code})`}`);
}
