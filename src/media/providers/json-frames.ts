/**
 * What the JSON-text provider dialects share: a frame parsed to an object, its fields read with errors
 * that name them, a DTMF digit checked, and a configured token compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { BridgeError, describe } from '../../errors.js';

export type Obj = Record<string, unknown>;

const DIGITS = /^[0-9*#A-Da-d]$/;

/** A text frame as a JSON object; `platform` names the dialect in the error for a binary frame. */
export function parseJson(data: Buffer, isBinary: boolean, platform: string): Obj {
  if (isBinary) throw new BridgeError('unknown_event', `${platform} frames are JSON text, not binary`);
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

/** A caller's key: 0-9, *, #, A-D (upper-cased). */
export function digitField(v: unknown, field: string): string {
  if (typeof v !== 'string' || !DIGITS.test(v))
    throw new BridgeError('invalid_field', `${field} must be one of 0-9, *, #, A-D, got ${describe(v)}`, {
      field,
    });
  return v.toUpperCase();
}

/** Whether `given` is the configured token, in time independent of where they differ. */
export function sameToken(given: string, want: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(want).digest();
  return timingSafeEqual(a, b);
}
