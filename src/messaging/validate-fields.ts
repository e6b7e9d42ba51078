/**
 * The limits of the messaging documents (and ours where they say "not shown"), and the small checks
 * the chat and RCS validators share: each throws a 400 BridgeError naming the field and what is accepted.
 */
import { BridgeError, describe } from '../errors.js';
import { isObj, type Obj } from '../provider/json.js';

export { chatPhoneProblem, RCS_MOBILE, rcsMobileFrom } from './phone.js';

// ---------------------------------------------------------------------------------------------------
// Limits of the documents, and ours where they say "not shown"

export const LIMITS = {
  headerChars: 60,
  headerVariables: 1,
  bodyChars: 1_024,
  bodyVariables: 10,
  footerChars: 60,
  buttonsPerTemplate: 3,
  buttonTextChars: 20,
  textMessageChars: 4_096,
  captionChars: 1_024,
  interactiveBodyChars: 1_024,
  interactiveButtons: 3,
  interactiveTitleChars: 20,
  /** RCS template names: "short" in rcs.md; 64 is ours. */
  rcsTemplateNameChars: 64,
  /** RCS suggestion labels: "short and verb-led" in rcs.md; 25 is ours. */
  rcsLabelChars: 25,
  /** Suggestions on a text or standalone template (ours: rcs.md gives no number). */
  rcsSuggestions: 4,
  /** Suggestions on one carousel card (ours). */
  rcsCardSuggestions: 2,
  rcsCardsMin: 2,
  rcsCardsMax: 10,
} as const;

export const TEMPLATE_NAME = /^[a-z]+(_[a-z]+)*$/;
export const LOCALE = /^[a-z]{2,3}_[A-Z]{2}$/;
export const E164 = /^\+[1-9][0-9]{6,14}$/;

export const MANAGER_ACTIONS = ['create', 'get_status', 'sync', 'delete'] as const;
/** The message types chat.md lists for `/chat_message_sender`: all free-form (no template there). */
export const MESSAGE_TYPES = ['text', 'image', 'document', 'interactive'] as const;
export const IMAGE_EXTENSIONS = ['jpg', 'jpeg', 'png'] as const;
export const DOCUMENT_EXTENSIONS = ['pdf', 'doc', 'docx', 'xls', 'xlsx', 'ppt', 'pptx'] as const;

// ---------------------------------------------------------------------------------------------------
// Helpers

export { isObj, type Obj } from '../provider/json.js';

export function invalid(field: string, message: string): never {
  throw new BridgeError('invalid_field', message, { field });
}

export function missing(field: string, message = `${field} is required`): never {
  throw new BridgeError('bad_request', message, { field });
}

/** `field must be <accepted>, got <value>`, as `invalidField` of src/errors.ts words it. */
export function mustBe(field: string, accepted: string, got: unknown): never {
  invalid(field, `${field} must be ${accepted}, got ${describe(got)}`);
}

export function object(v: unknown, field: string): Obj {
  if (v === undefined) missing(field);
  if (!isObj(v)) mustBe(field, 'an object', v);
  return v;
}

export function body(v: unknown): Obj {
  if (!isObj(v)) throw new BridgeError('bad_request', `the body must be a JSON object, got ${describe(v)}`);
  return v;
}

/** A required non-empty string of at most `max` characters. */
export function text(v: unknown, field: string, max?: number): string {
  if (v === undefined || v === null) missing(field);
  if (typeof v !== 'string' || v.trim() === '') {
    mustBe(
      field,
      max === undefined ? 'a non-empty string' : `a non-empty string of at most ${max} characters`,
      v,
    );
  }
  if (max !== undefined && v.length > max) {
    invalid(field, `${field} must be at most ${max} characters, got ${v.length}`);
  }
  return v;
}

export function optionalText(v: unknown, field: string, max?: number): string | undefined {
  return v === undefined ? undefined : text(v, field, max);
}

export function oneOf<T extends string>(v: unknown, field: string, allowed: readonly T[]): T {
  if (v === undefined) missing(field, `${field} is required: one of ${allowed.join(', ')}`);
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    mustBe(field, `one of ${allowed.join(', ')}`, v);
  }
  return v as T;
}

export function optionalOneOf<T extends string>(
  v: unknown,
  field: string,
  allowed: readonly T[],
): T | undefined {
  return v === undefined ? undefined : oneOf(v, field, allowed);
}

export function array(v: unknown, field: string, min: number, max: number, what: string): unknown[] {
  if (v === undefined) missing(field);
  if (!Array.isArray(v)) mustBe(field, `an array of ${min} to ${max} ${what}`, v);
  if (v.length < min || v.length > max) {
    invalid(field, `${field} must hold ${min} to ${max} ${what}, got ${v.length}`);
  }
  return v;
}

export function httpUrl(v: unknown, field: string): URL {
  const s = text(v, field);
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    mustBe(field, 'an http or https URL', s);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') mustBe(field, 'an http or https URL', s);
  return url;
}

/** The lower-case extension of a file name or URL path, or '' when it has none. */
export function extension(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? '' : base.slice(dot + 1).toLowerCase();
}

export function stringMap(v: unknown, field: string): Record<string, string> {
  const o = object(v, field);
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(o)) {
    if (typeof value !== 'string') mustBe(`${field}.${k}`, 'a string', value);
    out[k] = value;
  }
  return out;
}
