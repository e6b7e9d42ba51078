/**
 * Faults a test can inject: refuse the next handshakes with an HTTP status (401, 429, ...), and frames a
 * real server would never send, for checking that a client skips them and goes on.
 */
import type { WebSocket } from 'ws';
import { newId } from './events.js';

export const MALFORMED_KINDS = ['json', 'binary', 'unknown_event', 'no_type', 'oversized'] as const;
export type MalformedKind = (typeof MALFORMED_KINDS)[number];

/** Bytes of the `oversized` frame: past the 15 MiB the real server takes per event. */
export const OVERSIZED_BYTES = 16 * 1024 * 1024;

export function sendMalformed(ws: WebSocket, kind: MalformedKind): void {
  switch (kind) {
    case 'json':
      ws.send('{"type":"response.output_audio.delta","delta":');
      break;
    case 'binary':
      ws.send(Buffer.from([0xde, 0xad, 0xbe, 0xef]), { binary: true });
      break;
    case 'unknown_event':
      ws.send(JSON.stringify({ type: 'emulator.unknown_event', event_id: newId('event') }));
      break;
    case 'no_type':
      ws.send(JSON.stringify({ event_id: newId('event'), delta: 'AAAA' }));
      break;
    case 'oversized':
      ws.send(
        JSON.stringify({
          type: 'response.output_audio.delta',
          event_id: newId('event'),
          delta: 'A'.repeat(OVERSIZED_BYTES),
        }),
      );
      break;
  }
}

const HANDSHAKE_ERRORS: Record<number, { message: string; type: string; code: string | null }> = {
  401: {
    message: 'Incorrect API key provided. You can find your API key at your account settings.',
    type: 'invalid_request_error',
    code: 'invalid_api_key',
  },
  429: {
    message: 'Rate limit reached for requests. Please try again shortly.',
    type: 'requests',
    code: 'rate_limit_exceeded',
  },
};

/** The JSON error body of a refused handshake, in the API's error shape. */
export function handshakeErrorBody(status: number, message?: string): string {
  const known = HANDSHAKE_ERRORS[status] ?? {
    message: `Handshake refused (${status}).`,
    type: 'server_error',
    code: null,
  };
  return JSON.stringify({ error: { ...known, message: message ?? known.message, param: null } });
}

/** The handshakes still to refuse, first in first out. */
export class ConnectFaults {
  private readonly queue: number[] = [];

  failNext(status: number, count = 1): void {
    for (let i = 0; i < count; i++) this.queue.push(status);
  }

  /** The status to refuse this handshake with, or undefined to let it through. */
  take(): number | undefined {
    return this.queue.shift();
  }

  get pending(): number {
    return this.queue.length;
  }
}
