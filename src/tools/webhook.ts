/**
 * A webhook tool's call (CONTRACT §10): `POST url` with JSON `{session_id, tenant, tool, call_id,
 * arguments}`, signed (signature.ts), answered within the tool's `timeout_ms`. Its 2xx JSON body, at
 * most 64 KB, is the output (a body that is not an object becomes `{result: <body>}`, since every
 * dialect's answer carries an object); every failure becomes an `{error, message}` output for the model,
 * never an exception, with the codes of src/errors.ts:
 *
 *   upstream_unavailable   the connection was refused, the host unknown, or no key to sign with
 *   upstream_timeout       no whole answer within timeout_ms
 *   upstream_bad_answer    a status other than 2xx, a body that is not JSON, or one larger than 64 KB
 *
 * Redirects are not followed (undici's request does not): the URL checked is the URL called. Nothing
 * here logs the arguments or the answer; the caller logs the outcome only.
 */
import { Agent, request } from 'undici';
import { displayUrl } from '../log.js';
import type { ToolOutput } from '../media/bot/types.js';
import { SIGNATURE_HEADER, signature } from './signature.js';

/** The most of a webhook's answer read (CONTRACT §10). */
export const MAX_OUTPUT_BYTES = 64 * 1024;

export interface WebhookCall {
  readonly url: string;
  readonly timeoutMs: number;
  /** The key to sign with; undefined: the call is not made. */
  readonly secret: string | undefined;
  readonly body: {
    readonly session_id: string;
    readonly tenant: string;
    readonly tool: string;
    readonly call_id: string;
    readonly arguments: unknown;
  };
  /** Aborts the call (the session ended, or the model withdrew it). */
  readonly signal: AbortSignal;
}

/** One agent for every webhook tool of a bridge: connections reused, bounded like the provider's. */
export function createWebhookAgent(): Agent {
  return new Agent({
    connect: { timeout: 5_000 },
    // Backstops only: each call's own AbortSignal is the bound (timeout_ms, at most 30 s).
    headersTimeout: 31_000,
    bodyTimeout: 31_000,
    keepAliveTimeout: 4_000,
  });
}

/** Makes the call; resolves with the output, or an `{error, message}` output. Never rejects. */
export async function callWebhook(agent: Agent, call: WebhookCall): Promise<ToolOutput> {
  const where = displayUrl(call.url);
  if (call.secret === undefined)
    return {
      error: 'upstream_unavailable',
      message: `the tool cannot be called: no tool_secret is set to sign its calls with`,
    };
  const text = JSON.stringify(call.body);
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), call.timeoutMs);
  const signal = AbortSignal.any([timeout.signal, call.signal]);
  try {
    const res = await request(call.url, {
      method: 'POST',
      dispatcher: agent,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        [SIGNATURE_HEADER]: signature(call.secret, text, Math.floor(Date.now() / 1000)),
      },
      body: text,
      signal,
    });
    if (res.statusCode < 200 || res.statusCode > 299) {
      res.body.resume();
      return {
        error: 'upstream_bad_answer',
        message: `the tool's server ${where} answered ${res.statusCode}`,
      };
    }
    const parts: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_OUTPUT_BYTES) {
        res.body.destroy();
        return {
          error: 'upstream_bad_answer',
          message: `the tool's server ${where} answered more than ${MAX_OUTPUT_BYTES} bytes`,
        };
      }
      parts.push(chunk as Buffer);
    }
    let value: unknown;
    try {
      value = JSON.parse(Buffer.concat(parts).toString('utf8'));
    } catch {
      return {
        error: 'upstream_bad_answer',
        message: `the tool's server ${where} answered a body that is not JSON`,
      };
    }
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as ToolOutput)
      : { result: value };
  } catch (err) {
    if (timeout.signal.aborted)
      return {
        error: 'upstream_timeout',
        message: `the tool's server ${where} did not answer within ${call.timeoutMs} ms`,
      };
    if (call.signal.aborted) return { error: 'cancelled', message: 'the call of the tool was cancelled' };
    const code = (err as { code?: unknown }).code;
    return {
      error: 'upstream_unavailable',
      message: `the tool's server ${where} cannot be reached${typeof code === 'string' && /^[A-Z_]+$/.test(code) ? ` (${code})` : ''}`,
    };
  } finally {
    clearTimeout(timer);
  }
}
