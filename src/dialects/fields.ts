/**
 * The kinds of bot field a dialect declares with (a string within bounds, one of a list, a secret),
 * each with its rule, its "accepts" words and its OpenAPI schema, and the words every message uses to
 * describe a value it will not quote. A dialect's own kind (Twilio's `parameters`) is written in its
 * module with the same helpers.
 */
import type { BotFieldDecl, EnvVarDecl, FieldProblem } from './types.js';

/** What a value is, never what it says. */
export function kindOf(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return 'a string';
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

/** A non-secret value as a message may quote it: short strings quoted (none that looks like a URL), else their kind. */
export function shortValue(v: unknown): string {
  if (typeof v === 'string') {
    if (/@|:\/\//.test(v)) return '(not shown)';
    return JSON.stringify(v.length > 32 ? `${v.slice(0, 32)}…` : v);
  }
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return kindOf(v);
}

/** "`field` must be `accepts`, got `got`". */
export function mustBe(field: string, accepts: string, got: string): FieldProblem {
  return { field, message: `${field} must be ${accepts}, got ${got}` };
}

interface Common<K extends string, V> {
  readonly key: K;
  readonly example: V;
  readonly rest: string;
  readonly env?: EnvVarDecl;
  readonly note?: string;
}

/** A string of `min` (0 or 1) to `max` characters. */
export function stringField<K extends string>(
  o: Common<K, string> & { readonly min: 0 | 1; readonly max: number },
): BotFieldDecl<K, string> {
  const accepts =
    o.min === 0 ? `a string of at most ${o.max} characters` : `a string of 1 to ${o.max} characters`;
  return {
    key: o.key,
    rest: o.rest,
    example: o.example,
    ...(o.env !== undefined && { env: o.env }),
    ...(o.note !== undefined && { note: o.note }),
    accepts,
    schema: { type: 'string' },
    check: (value, field) => {
      if (typeof value !== 'string') return mustBe(field, accepts, kindOf(value));
      if (value.length < o.min || value.length > o.max)
        return mustBe(field, accepts, `${value.length} characters`);
      return undefined;
    },
  };
}

/** One of `values`; `dflt` is what the dialect does when it is left out. */
export function enumField<K extends string, const V extends readonly string[]>(
  o: Common<K, V[number]> & { readonly values: V; readonly dflt: V[number] },
): BotFieldDecl<K, V[number]> {
  const accepts = `one of ${o.values.join(', ')} (default ${o.dflt})`;
  return {
    key: o.key,
    rest: o.rest,
    example: o.example,
    ...(o.env !== undefined && { env: o.env }),
    ...(o.note !== undefined && { note: o.note }),
    accepts,
    schema: { type: 'string', enum: o.values },
    check: (value, field) =>
      typeof value === 'string' && o.values.includes(value)
        ? undefined
        : mustBe(field, accepts, shortValue(value)),
  };
}

/** A key or token: 1 to `max` characters without spaces, write-only. A message gives its length only. */
export function secretField<K extends string>(
  o: Common<K, string> & { readonly max: number },
): BotFieldDecl<K, string> {
  const accepts = `a string of 1 to ${o.max} characters without spaces (write-only)`;
  return {
    key: o.key,
    rest: o.rest,
    example: o.example,
    ...(o.env !== undefined && { env: o.env }),
    ...(o.note !== undefined && { note: o.note }),
    secret: true,
    accepts,
    schema: { type: 'string', writeOnly: true },
    check: (value, field) => {
      if (typeof value !== 'string') return mustBe(field, accepts, kindOf(value));
      const spaces = /\s/.test(value);
      if (value.length === 0 || value.length > o.max || spaces)
        return mustBe(field, accepts, `${value.length} characters${spaces ? ' with spaces' : ''}`);
      return undefined;
    },
  };
}

/** What a read shows of a secret field: its last 4 characters behind a mask, and none of a short one. */
export function secretHint(secret: string): string {
  return secret.length >= 16 ? `****${secret.slice(-4)}` : '****';
}
