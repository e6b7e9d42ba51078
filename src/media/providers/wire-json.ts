/**
 * Reading the JSON text frames of the provider dialects, the call their start frame describes, and their
 * shared credential checks: each failure a BridgeError naming the field and what is accepted.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { BridgeError, describe } from '../../errors.js';
import type { CallFrame, CallStart } from './types.js';

export type Obj = Record<string, unknown>;

export const DTMF_DIGITS = /^[0-9*#A-Da-d]$/;

/** A JSON object from a text frame; `platform` names the dialect in the error for a binary frame. */
export function parseJson(data: Buffer, isBinary: boolean, platform: string): Obj {
  if (isBinary) throw new BridgeError('unknown_event', `${platform} events are JSON text, not binary`);
  let v: unknown;
  try {
    v = JSON.parse(data.toString('utf8'));
  } catch {
    throw new BridgeError('bad_json', 'a frame is not valid JSON');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new BridgeError('bad_json', 'a frame must be a JSON object');
  return v as Obj;
}

/** A start frame the call cannot begin with (the connection closes 4400). */
export function badStart(message: string): BridgeError {
  return new BridgeError('bad_session_start', message);
}

/**
 * Reads a start frame with `read`: any other BridgeError it throws (a field missing, bad JSON) becomes
 * `bad_session_start`, "not a valid <platform> start: …".
 */
export function readStart<T>(platform: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof BridgeError && err.code !== 'bad_session_start')
      throw badStart(`not a valid ${platform} start: ${err.message}`);
    throw err;
  }
}

/** The call of a start frame: the platform's call id, and the caller's number and direction where given. */
export function callStart(sessionId: string, phone: unknown, direction: unknown): CallStart {
  return {
    session_id: sessionId,
    customer_phone: typeof phone === 'string' && phone !== '' ? phone : undefined,
    direction: direction === 'inbound' || direction === 'outbound' ? direction : undefined,
    started_at: undefined,
  };
}

/**
 * The events Twilio Media Streams and the platforms modelled on it (Telnyx, Exotel) share besides their
 * `media`: `dtmf`, `mark` (a mark played), `stop`, and `connected` or `start` again (nothing for the
 * call); `quiet` names events of the platform's own that carry nothing for the call either. Any other
 * event is `unknown_event`.
 */
export function streamEvent(o: Obj, quiet: readonly string[] = []): CallFrame {
  switch (o.event) {
    case 'dtmf':
      return { kind: 'dtmf', digit: digitField(objField(o, 'dtmf').digit, 'dtmf.digit') };
    case 'mark':
      return { kind: 'played', name: strField(objField(o, 'mark'), 'name', 'mark.name') };
    case 'stop':
      return { kind: 'end', reason: 'provider' };
    case 'connected':
    case 'start':
      return { kind: 'none' };
  }
  if (typeof o.event === 'string' && quiet.includes(o.event)) return { kind: 'none' };
  const events = ['connected', 'start', 'media', 'dtmf', 'mark', ...quiet].join(', ');
  throw new BridgeError('unknown_event', `event must be one of ${events} or stop, got ${describe(o.event)}`);
}

export function objField(o: Obj, key: string, field = key): Obj {
  const v = o[key];
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new BridgeError('invalid_field', `${field} must be an object, got ${describe(v)}`, { field });
  return v as Obj;
}

export function strField(o: Obj, key: string, field = key): string {
  const v = o[key];
  if (typeof v !== 'string' || v === '')
    throw new BridgeError('invalid_field', `${field} must be a non-empty string, got ${describe(v)}`, {
      field,
    });
  return v;
}

/** A DTMF digit (0-9, *, #, A-D), upper-cased. */
export function digitField(v: unknown, field: string): string {
  if (typeof v !== 'string' || !DTMF_DIGITS.test(v))
    throw new BridgeError('invalid_field', `${field} must be one of 0-9, *, #, A-D, got ${describe(v)}`, {
      field,
    });
  return v.toUpperCase();
}

/** Whole 16-bit samples, or an error naming the count. */
export function evenL16(bytes: Uint8Array): Uint8Array {
  if ((bytes.length & 1) !== 0)
    throw new BridgeError(
      'odd_length',
      `L16 audio must be whole 16-bit samples (an even byte count), got ${bytes.length} bytes`,
    );
  return bytes;
}

/**
 * Whether `given` is the configured secret, in time independent of where (or whether, by length) they
 * differ: both are hashed to the same length first.
 */
export function sameSecret(given: string, want: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(want).digest();
  return timingSafeEqual(a, b);
}

/** The upgrade's `Authorization` header when it has `scheme` (`Basic`, `Bearer`), else undefined. */
export function authorization(req: IncomingMessage, scheme: string): string | undefined {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const m = /^([A-Za-z]+)[ ]+([^ ]+)[ ]*$/.exec(header);
  if (m === null || m[1]!.toLowerCase() !== scheme.toLowerCase()) return undefined;
  return m[2];
}

/**
 * Checks the upgrade's HTTP Basic credentials against `user` and `password` (both compared, whichever
 * differs: no hint of which was wrong); throws 401 naming `what` the credentials are for.
 */
export function checkBasic(req: IncomingMessage, user: string, password: string, what: string): void {
  const given = authorization(req, 'Basic');
  if (given === undefined)
    throw new BridgeError('unauthorized', 'the upgrade has no Authorization: Basic header');
  const pair = Buffer.from(given, 'base64').toString('utf8');
  const colon = pair.indexOf(':');
  const userOk = sameSecret(pair.slice(0, Math.max(0, colon)), user);
  const passwordOk = sameSecret(pair.slice(colon + 1), password);
  if (colon < 0 || !userOk || !passwordOk)
    throw new BridgeError('unauthorized', `the Basic credentials are not the ${what} credentials`);
}
