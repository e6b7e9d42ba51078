/**
 * The one table of typed errors. Every error the bridge reports, over HTTP or over a media socket,
 * has a stable code here with its HTTP status and, where it ends a socket, its WebSocket close code.
 */

export interface ErrorSpec {
  /** HTTP status when the error answers a request. */
  readonly status: number;
  /** WebSocket close code when the error ends a media socket; undefined when it only reports. */
  readonly close?: number;
}

export const ERRORS = {
  // REST and configuration
  bad_request: { status: 400 },
  unauthorized: { status: 401, close: 1008 },
  forbidden: { status: 403, close: 1008 },
  not_found: { status: 404 },
  conflict: { status: 409 },
  // Consult or conference on a call from another platform's media stream (the message names it).
  unsupported_for_dialect: { status: 409 },
  payload_too_large: { status: 413, close: 1009 },
  // A Range past the end of a recording's file.
  range_not_satisfiable: { status: 416 },
  // A WebSocket route (listen-in) asked for without the upgrade.
  upgrade_required: { status: 426 },
  too_many_requests: { status: 429 },
  internal: { status: 500, close: 1011 },
  upstream_bad_answer: { status: 502 },
  upstream_unavailable: { status: 503 },
  not_ready: { status: 503, close: 1001 },
  capacity: { status: 503, close: 1013 },
  upstream_timeout: { status: 504 },
  // The shared state store (STATE_STORE=redis://…) cannot be reached; the message names it.
  store_unavailable: { status: 503, close: 1013 },

  // Messaging (chat and RCS): the provider's refusals, as the bridge passes them on
  // The account's credits ran out (provider 402).
  payment_required: { status: 402 },
  // Free-form chat after the customer's 24-hour window (network code 131047): send a template instead.
  window_closed: { status: 409 },
  // The messaging network refused the message (131026 undeliverable, 131053 media type, 100 parameter).
  message_rejected: { status: 422 },
  // The live call's customer_phone (from the provider's session_start, not from the request) cannot be
  // messaged on the channel asked for; the message says what is wrong and what is accepted, never the number.
  unusable_customer_phone: { status: 422 },

  // A tool's arguments that do not fit its parameters: an output to the bot's model (CONTRACT §10), never
  // a response or a close, listed here so that every code the bridge reports is in one table.
  invalid_arguments: { status: 400 },

  // Media socket: frames that are reported with an `error` event and skipped
  bad_json: { status: 400 },
  unknown_event: { status: 400 },
  invalid_field: { status: 400 },
  bad_base64: { status: 400 },
  odd_length: { status: 400 },
  duplicate_session_start: { status: 400 },
  bot_unavailable: { status: 502 },
  // Frames past the bound held while a session is being set up (the message says how many).
  frames_dropped: { status: 503 },

  // Media socket: conditions that close it
  bad_session_start: { status: 400, close: 4400 },
  session_live: { status: 409, close: 4409 },
  tenant_mismatch: { status: 403, close: 1008 },
  token_expired: { status: 401, close: 1008 },
  // More than MEDIA_BAD_FRAMES_PER_SEC bad frames within one second (src/media/bad-frames.ts).
  bad_frame_flood: { status: 429, close: 1008 },
  frame_too_large: { status: 413, close: 1009 },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** An error with a stable code; its message says what was wrong and what is accepted. */
export class BridgeError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly close: number | undefined;
  /** The offending field, where one field is to blame. */
  readonly field: string | undefined;

  constructor(code: ErrorCode, message: string, options?: { field?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'BridgeError';
    this.code = code;
    const spec: ErrorSpec = ERRORS[code];
    this.status = spec.status;
    this.close = spec.close;
    this.field = options?.field;
  }

  /** The contract's error body: `{"error": code, "message": text}`. */
  toBody(): { error: ErrorCode; message: string } {
    return { error: this.code, message: this.message };
  }
}

export function isBridgeError(err: unknown): err is BridgeError {
  return err instanceof BridgeError;
}

/** "input_sample_rate must be 8000 or 16000, got 11025" */
export function invalidField(field: string, accepted: string, got: unknown): BridgeError {
  return new BridgeError('invalid_field', `${field} must be ${accepted}, got ${describe(got)}`, { field });
}

export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
