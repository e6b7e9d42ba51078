/**
 * The media socket's text frames, validated into discriminated unions: what the provider sends the
 * bridge, and what a ws bot sends the bridge. Pure: no sockets. Every failure is a BridgeError whose
 * message says what was wrong and what is accepted.
 */
import {
  type Codec,
  type Encoding,
  parseChunkBytes,
  parseCodec,
  parseEncoding,
  parseTelephonyRate,
  type TelephonyRate,
} from '../audio/format.js';
import { BridgeError, describe, invalidField } from '../errors.js';

/** The `media` object of a `session_start`: each field optional, validated when present. */
export interface MediaOverrides {
  readonly codec?: Codec;
  readonly sample_rate?: TelephonyRate;
  readonly output_sample_rate?: TelephonyRate;
  readonly encoding?: Encoding;
  readonly chunk_bytes?: number;
}

export interface SessionStartEvent {
  readonly event: 'session_start';
  readonly session_id: string;
  /** Optional; when present it must name the tenant the token was issued for. */
  readonly tenant: string | undefined;
  readonly customer_phone: string | undefined;
  readonly direction: 'inbound' | 'outbound' | undefined;
  readonly started_at: string | undefined;
  readonly media: MediaOverrides | undefined;
}
export interface MediaEvent {
  readonly event: 'media';
  readonly payload: string;
}
export interface DtmfEvent {
  readonly event: 'dtmf';
  readonly digit: string;
}
export interface MarkEvent {
  readonly event: 'mark';
  readonly name: string;
}
export interface SessionEndEvent {
  readonly event: 'session_end';
  readonly reason: string | undefined;
}
export interface ClearEvent {
  readonly event: 'clear';
}
/** The bot's model calls one of the call's tools (docs/tools.md); answered with `tool_result`. */
export interface ToolCallEvent {
  readonly event: 'tool_call';
  readonly id: string;
  readonly name: string;
  /** The arguments object (absent: `{}`). */
  readonly arguments: unknown;
}

export type ProviderEvent = SessionStartEvent | MediaEvent | DtmfEvent | MarkEvent | SessionEndEvent;
export type BotEvent = MarkEvent | ClearEvent | DtmfEvent | SessionEndEvent | ToolCallEvent;

const PROVIDER_EVENTS = 'session_start, media, dtmf, mark or session_end';
const BOT_EVENTS = 'mark, clear, dtmf, tool_call or session_end (audio as binary frames)';
const DIGITS = /^[0-9*#A-D]$/i;
const NAME_MAX = 256;

type Obj = Record<string, unknown>;

function parseObject(text: string): Obj {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BridgeError(
      'bad_json',
      'text frames must be JSON objects with an "event" field; this one is not JSON',
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BridgeError(
      'bad_json',
      `text frames must be JSON objects with an "event" field, got ${describe(value)}`,
    );
  }
  return value as Obj;
}

function str(o: Obj, field: string, max = NAME_MAX): string {
  const v = o[field];
  if (typeof v !== 'string' || v === '' || v.length > max) {
    throw invalidField(field, `a non-empty string of at most ${max} characters`, v);
  }
  return v;
}

function optStr(o: Obj, field: string, max = NAME_MAX): string | undefined {
  return o[field] === undefined || o[field] === null ? undefined : str(o, field, max);
}

function parseMedia(value: unknown): MediaOverrides | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidField('media', 'an object', value);
  const m = value as Obj;
  const out: {
    codec?: Codec;
    sample_rate?: TelephonyRate;
    output_sample_rate?: TelephonyRate;
    encoding?: Encoding;
    chunk_bytes?: number;
  } = {};
  if (m.codec !== undefined) out.codec = parseCodec(m.codec, 'media.codec');
  if (m.sample_rate !== undefined) out.sample_rate = parseTelephonyRate(m.sample_rate, 'media.sample_rate');
  if (m.output_sample_rate !== undefined)
    out.output_sample_rate = parseTelephonyRate(m.output_sample_rate, 'media.output_sample_rate');
  if (m.encoding !== undefined) out.encoding = parseEncoding(m.encoding, 'media.encoding');
  if (m.chunk_bytes !== undefined) out.chunk_bytes = parseChunkBytes(m.chunk_bytes, 'media.chunk_bytes');
  return out;
}

/** Validates a `session_start` (already parsed); throws `invalid_field` naming the field. */
function sessionStart(o: Obj): SessionStartEvent {
  const session_id = str(o, 'session_id', 128);
  const customer_phone = optStr(o, 'customer_phone', 64);
  const direction = o.direction;
  if (direction !== undefined && direction !== 'inbound' && direction !== 'outbound') {
    throw invalidField('direction', '"inbound" or "outbound"', direction);
  }
  const started_at = optStr(o, 'started_at', 64);
  if (started_at !== undefined && Number.isNaN(Date.parse(started_at))) {
    throw invalidField('started_at', 'an ISO 8601 time such as "2024-05-01T12:00:00Z"', started_at);
  }
  const tenant = optStr(o, 'tenant');
  return {
    event: 'session_start',
    session_id,
    tenant,
    customer_phone,
    direction,
    started_at,
    media: parseMedia(o.media),
  };
}

function dtmf(o: Obj): DtmfEvent {
  const digit = o.digit;
  if (typeof digit !== 'string' || !DIGITS.test(digit))
    throw invalidField('digit', 'one of 0-9, *, #, A-D', digit);
  return { event: 'dtmf', digit: digit.toUpperCase() };
}

/** A provider text frame; throws `bad_json`, `unknown_event` or `invalid_field`. */
export function parseProviderEvent(text: string): ProviderEvent {
  const o = parseObject(text);
  switch (o.event) {
    case 'session_start':
      return sessionStart(o);
    case 'media': {
      const payload = o.payload;
      if (typeof payload !== 'string') throw invalidField('payload', 'a base64 string', payload);
      // seq and timestamp are informational (the bridge orders by arrival) but must have their types.
      if (o.seq !== undefined && !(Number.isInteger(o.seq) && (o.seq as number) >= 0)) {
        throw invalidField('seq', 'a whole number', o.seq);
      }
      const ts = o.timestamp;
      if (ts !== undefined && typeof ts !== 'string' && !(typeof ts === 'number' && Number.isFinite(ts))) {
        throw invalidField('timestamp', 'a number or a string', ts);
      }
      return { event: 'media', payload };
    }
    case 'dtmf':
      return dtmf(o);
    case 'mark':
      return { event: 'mark', name: str(o, 'name') };
    case 'session_end':
      return { event: 'session_end', reason: optStr(o, 'reason') };
    default:
      throw new BridgeError(
        'unknown_event',
        `event must be one of ${PROVIDER_EVENTS}, got ${describe(o.event)}`,
      );
  }
}

/** The start of a `media` event as providers write it, its payload next (see compactMediaPayload). */
export const COMPACT_MEDIA_HEAD = Buffer.from('{"event":"media","payload":"', 'latin1');
const COMPACT_SEQ = Buffer.from(',"seq":', 'latin1');
const COMPACT_TIMESTAMP = Buffer.from(',"timestamp":', 'latin1');
/** `"`, `}`, `0`, `9`. */
const QUOTE = 0x22;
const CLOSE = 0x7d;
const ZERO = 0x30;
const NINE = 0x39;

/**
 * Where the payload of a `media` event ends, for the compact form a provider writes: exactly
 * `{"event":"media","payload":"<base64>"}`, or with `,"seq":<n>,"timestamp":<n>` before the `}` (whole
 * numbers written plainly, at most 15 digits). The payload starts at COMPACT_MEDIA_HEAD.length, holds no
 * `"` and is whole base64 quads; whether its characters decode is the decoder's to say. -1 for any other
 * text, which parseProviderEvent then reads: the compact form is valid JSON that it reads as a media
 * event with this payload, so a caller may decode the span instead of parsing (and must fall back to the
 * parser when the span does not decode whole, where an escape may stand for a character).
 */
export function compactMediaPayload(data: Uint8Array): number {
  const n = data.length;
  const head = COMPACT_MEDIA_HEAD;
  if (n < head.length + 2) return -1;
  for (let i = 0; i < head.length; i++) if (data[i] !== head[i]) return -1;
  const end = data.indexOf(QUOTE, head.length);
  if (end < 0 || ((end - head.length) & 3) !== 0) return -1;
  let i = end + 1;
  if (i === n - 1 && data[i] === CLOSE) return end;
  i = afterNumber(data, afterBytes(data, i, COMPACT_SEQ));
  i = afterNumber(data, afterBytes(data, i, COMPACT_TIMESTAMP));
  return i === n - 1 && data[i] === CLOSE ? end : -1;
}

/** The index after `bytes` found at `at` in `data`, or -1. */
function afterBytes(data: Uint8Array, at: number, bytes: Uint8Array): number {
  if (at < 0 || at + bytes.length > data.length) return -1;
  for (let k = 0; k < bytes.length; k++) if (data[at + k] !== bytes[k]) return -1;
  return at + bytes.length;
}

/** The index after a JSON whole number of 1-15 digits (no sign, no leading zero) at `at`, or -1. */
function afterNumber(data: Uint8Array, at: number): number {
  if (at < 0) return -1;
  let i = at;
  while (i < data.length && data[i]! >= ZERO && data[i]! <= NINE) i++;
  const digits = i - at;
  if (digits === 0 || digits > 15 || (digits > 1 && data[at] === ZERO)) return -1;
  return i;
}

/**
 * The first frame of a provider socket: it must be a valid `session_start`. Any failure (including a
 * binary frame, handled by the caller) is `bad_session_start`, which closes the socket with 4400.
 */
export function parseSessionStart(text: string): SessionStartEvent {
  let o: Obj;
  try {
    o = parseObject(text);
    if (o.event !== 'session_start') {
      throw new BridgeError(
        'bad_session_start',
        `the first frame must be a session_start event, got ${describe(o.event)}`,
      );
    }
    return sessionStart(o);
  } catch (err) {
    if (err instanceof BridgeError && err.code !== 'bad_session_start') {
      throw new BridgeError(
        'bad_session_start',
        `the first frame must be a valid session_start: ${err.message}`,
        {
          cause: err,
        },
      );
    }
    throw err;
  }
}

/** A ws bot's text frame; throws `bad_json`, `unknown_event` or `invalid_field`. */
export function parseBotEvent(text: string): BotEvent {
  const o = parseObject(text);
  switch (o.event) {
    case 'mark':
      return { event: 'mark', name: str(o, 'name') };
    case 'clear':
      return { event: 'clear' };
    case 'dtmf':
      return dtmf(o);
    case 'session_end':
      return { event: 'session_end', reason: optStr(o, 'reason') };
    case 'tool_call': {
      const args = o.arguments ?? {};
      if (typeof args !== 'object' || Array.isArray(args))
        throw invalidField('arguments', "an object (the tool's arguments)", args);
      return { event: 'tool_call', id: str(o, 'id'), name: str(o, 'name', 64), arguments: args };
    }
    default:
      throw new BridgeError(
        'unknown_event',
        `bot event must be one of ${BOT_EVENTS}, got ${describe(o.event)}`,
      );
  }
}

/** The `error` event sent to a peer; built by hand (codes and messages are ours, JSON-safe via stringify). */
export function errorFrame(err: BridgeError): string {
  return JSON.stringify({ event: 'error', code: err.code, message: err.message });
}
