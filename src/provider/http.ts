/**
 * HTTP plumbing shared by the provider's clients (voice in ./client.ts, messaging in
 * ./messaging/client.ts), on undici: the agent with explicit bounds, one request bounded by a deadline
 * and read whole, the mapping of transport failures to typed errors naming the call, and the timing and
 * failure log line of each call.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Agent, request, errors as undiciErrors } from 'undici';
import { BridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';

export interface HttpBounds {
  /** TCP (and TLS) connect bound: a provider that cannot be reached fails fast with 503. */
  readonly connectTimeoutMs: number;
  /** Bound on one whole call, retries included. */
  readonly readTimeoutMs: number;
}

/** How far past the bound undici's coarse timers are set (they back up the precise AbortSignal). */
export const BACKSTOP_MS = 1_000;

/** Largest provider answer read; every documented answer is a few hundred bytes. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/** Error codes of a refused or failed TCP connection: the provider is unreachable. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

export function createAgent(bounds: HttpBounds): Agent {
  return new Agent({
    connect: { timeout: bounds.connectTimeoutMs },
    // Library defaults are 300 s; the provider's slowest documented answer is 25 s. undici's own timers
    // tick coarsely (up to ~500 ms early or late), so they are a backstop just past the bound; the exact
    // bound is the AbortSignal on each request.
    headersTimeout: bounds.readTimeoutMs + BACKSTOP_MS,
    bodyTimeout: bounds.readTimeoutMs + BACKSTOP_MS,
    // An idle connection is reused for 4 s at most: under the 5 s Node's HTTP servers (and others) keep
    // one, so a call is never sent on a socket the provider is closing. undici takes a shorter timeout
    // the provider announces in Keep-Alive.
    keepAliveTimeout: 4_000,
  });
}

export interface Exchange {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
}

export interface ExchangeRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  readonly url: string;
  readonly token: string | undefined;
  /** Sent as JSON when defined. */
  readonly body?: unknown;
  /** `performance.now()` by which the answer must be read whole. */
  readonly deadline: number;
}

/**
 * One request and its answer read whole, both within the deadline. Transport failures (no connection,
 * no answer in time, a broken or oversized answer) throw the BridgeError of `transportError`; any HTTP
 * status is returned for the caller to map.
 */
export async function exchange(
  agent: Agent,
  callName: string,
  bounds: HttpBounds,
  req: ExchangeRequest,
): Promise<Exchange> {
  const remaining = Math.round(req.deadline - performance.now());
  // A request sent with no time left would be aborted as it went out, perhaps after reaching the
  // provider: it is not sent at all. (Callers leave each attempt a working minimum of the bound.)
  if (remaining < 1) {
    throw transportError(callName, new DOMException('no time left for the request', 'TimeoutError'), bounds);
  }
  const headers: Record<string, string> = { accept: 'application/json' };
  if (req.token !== undefined) headers.authorization = `Bearer ${req.token}`;
  if (req.body !== undefined) headers['content-type'] = 'application/json';
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(req.url, {
      method: req.method,
      headers,
      body: req.body === undefined ? null : JSON.stringify(req.body),
      dispatcher: agent,
      headersTimeout: remaining + BACKSTOP_MS,
      bodyTimeout: remaining + BACKSTOP_MS,
      // The exact bound: the whole call, retries included, ends here even if the provider trickles bytes.
      signal: AbortSignal.timeout(remaining),
    });
  } catch (err) {
    throw transportError(callName, err, bounds);
  }
  try {
    return { status: res.statusCode, headers: res.headers, text: await readLimited(res.body) };
  } catch (err) {
    throw transportError(callName, err, bounds);
  }
}

export async function readLimited(body: AsyncIterable<Buffer>, maxBytes = MAX_ANSWER_BYTES): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) throw new Error(`answer larger than ${maxBytes / 1024 / 1024} MiB`);
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}

export function transportError(callName: string, err: unknown, bounds: HttpBounds): BridgeError {
  if (err instanceof BridgeError) return err;
  const e = err as { code?: string; name?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  if (
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    e.name === 'TimeoutError' ||
    e.name === 'AbortError' ||
    err instanceof undiciErrors.RequestAbortedError
  ) {
    return new BridgeError(
      'upstream_timeout',
      `provider ${callName} did not answer within ${bounds.readTimeoutMs} ms`,
      { cause: err },
    );
  }
  if (err instanceof undiciErrors.ConnectTimeoutError) {
    return new BridgeError(
      'upstream_unavailable',
      `provider ${callName} is unreachable: no connection within ${bounds.connectTimeoutMs} ms`,
      { cause: err },
    );
  }
  if (code !== undefined && UNREACHABLE.has(code)) {
    return new BridgeError('upstream_unavailable', `provider ${callName} is unreachable (${code})`, {
      cause: err,
    });
  }
  return new BridgeError(
    'upstream_bad_answer',
    `provider ${callName} failed: ${err instanceof Error ? err.message : String(err)}`,
    { cause: err },
  );
}

/** What a call's last attempt saw, for its failure log line: never the provider's text or bodies. */
export interface CallTrace {
  /** HTTP status of the last answer. */
  status?: number;
  /** `error_data.code` of the last answer (messaging network codes). */
  networkCode?: number;
}

export interface CallObservers {
  readonly metrics?: Metrics | undefined;
  readonly log?: Logger | undefined;
}

/**
 * Runs one provider call, retries included: times it into `voicebridge_upstream_seconds` by call and
 * outcome, and logs a failure with the call, the outcome (the error code), the last HTTP status and
 * network code, and the duration. Never the error's message: it may quote the provider's text, which
 * may hold phone numbers or what the request carried.
 */
export async function observeCall<T>(
  o: CallObservers,
  callName: string,
  run: (trace: CallTrace) => Promise<T>,
): Promise<T> {
  const started = performance.now();
  const trace: CallTrace = {};
  let outcome = 'ok';
  try {
    return await run(trace);
  } catch (err) {
    outcome = err instanceof BridgeError ? err.code : 'error';
    // The provider's refusals of a request are answers, not faults: those go at info.
    const fault = !(err instanceof BridgeError) || err.code.startsWith('upstream_');
    o.log?.[fault ? 'warn' : 'info'](
      {
        call: callName,
        outcome,
        ...(trace.status !== undefined ? { status: trace.status } : {}),
        ...(trace.networkCode !== undefined ? { network_code: trace.networkCode } : {}),
        ms: Math.round(performance.now() - started),
      },
      'provider call failed',
    );
    throw err;
  } finally {
    o.metrics?.upstreamSeconds.observe({ call: callName, outcome }, (performance.now() - started) / 1000);
  }
}
