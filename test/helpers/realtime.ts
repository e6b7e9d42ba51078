/**
 * Test helpers for the OpenAI Realtime stand-in: the TLS fixture it serves (the `openai` client dials
 * wss: only), an `openai` package client pointed at it, and the events that client received.
 */
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import type { RealtimeServerEvent } from 'openai/resources/realtime/realtime';
import { waitFor } from './wait.js';

const TLS_DIR = new URL('../fixtures/tls/', import.meta.url);
export const TEST_TLS = {
  cert: readFileSync(new URL('localhost-cert.pem', TLS_DIR)),
  key: readFileSync(new URL('localhost-key.pem', TLS_DIR)),
};

export interface Client {
  readonly rt: OpenAIRealtimeWS;
  readonly events: RealtimeServerEvent[];
  /** Errors the client reported (API `error` events and transport failures), with their error bodies. */
  readonly errors: { message: string; code?: string | null | undefined; param?: string | null | undefined }[];
  /** Resolves once the socket is open (rejects when the handshake fails). */
  readonly opened: Promise<void>;
  /** Waits for the n-th event of a type, returns it. */
  next<T extends RealtimeServerEvent['type']>(
    type: T,
    n?: number,
    timeoutMs?: number,
  ): Promise<Extract<RealtimeServerEvent, { type: T }>>;
  of<T extends RealtimeServerEvent['type']>(type: T): Extract<RealtimeServerEvent, { type: T }>[];
}

/** An `openai` realtime client on `baseUrl` (https://127.0.0.1:port), trusting the test certificate. */
export function openaiClient(baseUrl: string, apiKey = 'sk-test-key', model = 'gpt-realtime'): Client {
  const openai = new OpenAI({ apiKey, baseURL: `${baseUrl}/v1` });
  const rt = new OpenAIRealtimeWS({ model, options: { ca: TEST_TLS.cert } }, openai);
  const events: RealtimeServerEvent[] = [];
  const errors: Client['errors'] = [];
  rt.on('event', (e) => events.push(e));
  rt.on('error', (err) => {
    errors.push({ message: err.message, code: err.error?.code, param: err.error?.param });
  });
  const opened = new Promise<void>((resolve, reject) => {
    rt.socket.once('open', () => resolve());
    rt.socket.once('error', reject);
    rt.socket.once('close', () => reject(new Error('closed before open')));
  });
  opened.catch(() => {});
  const of = <T extends RealtimeServerEvent['type']>(type: T) =>
    events.filter((e): e is Extract<RealtimeServerEvent, { type: T }> => e.type === type);
  return {
    rt,
    events,
    errors,
    opened,
    of,
    async next(type, n = 1, timeoutMs = 5000) {
      await waitFor(() => of(type).length >= n, timeoutMs, `${n} x ${type}`);
      return of(type)[n - 1]!;
    },
  };
}

/** The audio of every `response.output_audio.delta` of a response, concatenated (base64-decoded). */
export function replyBytes(events: readonly RealtimeServerEvent[], responseId?: string): Buffer {
  const parts: Buffer[] = [];
  for (const e of events) {
    if (
      e.type === 'response.output_audio.delta' &&
      (responseId === undefined || e.response_id === responseId)
    ) {
      parts.push(Buffer.from(e.delta, 'base64'));
    }
  }
  return Buffer.concat(parts);
}

/** PCM16 LE bytes as samples (a copy, aligned). */
export function pcm16(bytes: Buffer): Int16Array {
  const out = new Int16Array(bytes.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readInt16LE(2 * i);
  return out;
}
