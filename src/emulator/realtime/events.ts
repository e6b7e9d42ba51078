/**
 * The OpenAI Realtime GA event types the stand-in speaks, taken from the `openai` package so that a wrong
 * event or field name fails the type check, plus ids in the server's style and the `error` event the real
 * server sends for a bad client event (`invalid_request_error` with a code and the offending param).
 */
import { randomBytes } from 'node:crypto';
import type * as RT from 'openai/resources/realtime/realtime';

export type ClientEvent = RT.RealtimeClientEvent;
export type ServerEvent = RT.RealtimeServerEvent;
export type SessionConfig = RT.RealtimeSessionCreateRequest;
export type AudioFormat = RT.RealtimeAudioFormats;
export type TurnDetection = RT.RealtimeAudioInputTurnDetection;
export type ConversationItem = RT.ConversationItem;
export type RealtimeResponse = RT.RealtimeResponse;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** A server event before the connection stamps its `event_id`. */
export type Outgoing = DistributiveOmit<ServerEvent, 'event_id'>;

/** An id like the server's: a prefix, then 21 url-safe characters (`event_BJhGhQ8u9AS5VUCumQT6X`). */
export function newId(prefix: 'event' | 'item' | 'resp' | 'sess' | 'conv'): string {
  return `${prefix}_${randomBytes(16).toString('base64url').slice(0, 21)}`;
}

/** A client event the real server would refuse: sent back as an `error` event, the session goes on. */
export class RealtimeRequestError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly type = 'invalid_request_error',
  ) {
    super(message);
  }
}

/** JSON's name for a value's type, as the server words it ("an integer", "a string"). */
function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a decimal';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'boolean') return 'a boolean';
  return typeof value;
}

export function invalidType(param: string, expected: string, got: unknown): RealtimeRequestError {
  return new RealtimeRequestError(
    'invalid_type',
    `Invalid type for '${param}': expected ${expected}, but got ${typeName(got)} instead.`,
    param,
  );
}

export function invalidValue(
  param: string,
  got: unknown,
  supported: readonly string[],
): RealtimeRequestError {
  const list = supported.map((s) => `'${s}'`).join(', ');
  return new RealtimeRequestError(
    'invalid_value',
    `Invalid value: '${String(got)}'. Supported values are: ${list}.`,
    param,
  );
}

export function unknownParameter(param: string): RealtimeRequestError {
  return new RealtimeRequestError('unknown_parameter', `Unknown parameter: '${param}'.`, param);
}

export function missingParameter(param: string): RealtimeRequestError {
  return new RealtimeRequestError(
    'missing_required_parameter',
    `Missing required parameter: '${param}'.`,
    param,
  );
}

export function outOfRange(param: string, got: number, min: number, max: number): RealtimeRequestError {
  const above = got > max;
  return new RealtimeRequestError(
    above ? 'decimal_above_max_value' : 'decimal_below_min_value',
    `Invalid '${param}': decimal ${above ? 'above maximum' : 'below minimum'} value. Expected a value ${above ? `<= ${max}` : `>= ${min}`}, but got ${got} instead.`,
    param,
  );
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Throws `unknown_parameter` for the first key of `o` not in `known`. */
export function onlyKeys(o: Record<string, unknown>, known: readonly string[], prefix: string): void {
  for (const k of Object.keys(o)) if (!known.includes(k)) throw unknownParameter(`${prefix}.${k}`);
}
