/**
 * The `twilio` bot dialect, declared: the bridge plays Twilio Media Streams toward a bot's WebSocket
 * server (µ-law 8 kHz), with the tenant's own `parameters` added to `start.customParameters`. Its leg:
 * src/media/bot/twilio.ts.
 */
import { kindOf, mustBe, shortValue } from '../fields.js';
import type { BotDialectDecl, BotFieldDecl, FieldProblem } from '../types.js';

/** `start.customParameters` the bridge fills itself (CONTRACT §6): a tenant's parameter may not take one. */
export const BRIDGE_PARAMETERS = ['session_id', 'tenant', 'customer_phone', 'direction'] as const;

/** Bounds, so a stored bot stays small (with every other field at its bound, under BODY_LIMIT_BYTES). */
const MAX_PARAMETERS = 32;
const NAME_CHARS = 64;
const VALUE_CHARS = 512;
const PARAMETER_NAME = /^[A-Za-z0-9_.-]+$/;

const ACCEPTS = `an object of at most ${MAX_PARAMETERS} string values, names of 1 to ${NAME_CHARS} letters, digits or "_.-" (not ${BRIDGE_PARAMETERS.join(', ')}), values of at most ${VALUE_CHARS} characters`;

/** Parameter values may be a bot's own tokens: a problem names the parameter, never its value. */
function parametersProblem(value: unknown, field: string): FieldProblem | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return mustBe(field, ACCEPTS, kindOf(value));
  const entries = Object.entries(value);
  if (entries.length > MAX_PARAMETERS) return mustBe(field, ACCEPTS, `${entries.length} parameters`);
  for (const [name, v] of entries) {
    if (name.length === 0 || name.length > NAME_CHARS || !PARAMETER_NAME.test(name)) {
      return mustBe(field, ACCEPTS, `a parameter named ${shortValue(name)}`);
    }
    if ((BRIDGE_PARAMETERS as readonly string[]).includes(name)) {
      return {
        field: `${field}.${name}`,
        message: `${field}.${name} is set by the bridge itself; ${field} must not name ${BRIDGE_PARAMETERS.join(', ')}`,
      };
    }
    if (typeof v !== 'string' || v.length > VALUE_CHARS) {
      const got = typeof v === 'string' ? `${v.length} characters` : kindOf(v);
      return {
        field: `${field}.${name}`,
        message: `${field}.${name} must be a string of at most ${VALUE_CHARS} characters, got ${got}`,
      };
    }
  }
  return undefined;
}

export const parameters: BotFieldDecl<'parameters', Readonly<Record<string, string>>> = {
  key: 'parameters',
  rest: 'parameters',
  example: { campaign: 'spring', lang: 'en' },
  accepts: ACCEPTS,
  schema: { type: 'object', additionalProperties: { type: 'string' } },
  note: 'added to start.customParameters',
  check: parametersProblem,
  value: (checked) => Object.freeze({ ...(checked as Record<string, string>) }),
};

export const twilio = {
  name: 'twilio',
  url: { kind: 'ws' },
  fields: [parameters],
  summary: "Twilio Media Streams toward the bot's WebSocket server",
} as const satisfies BotDialectDecl;
