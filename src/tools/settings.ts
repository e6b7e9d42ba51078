/**
 * The settings of a bot's tools (CONTRACT §10), checked the same way for both sources: a tenant's `bot`
 * (`bot.tools`, `bot.hold_audio`, `bot.tool_hold_ms`, `bot.idle`) and the environment's default bot
 * (`BOT_TOOLS`, `BOT_HOLD_AUDIO`, `BOT_TOOL_HOLD_MS`, `BOT_IDLE`). Pure functions: each takes a value as
 * given and the field's name as its source spells it, and answers the checked value or one problem that
 * names the field (down to the item: `bot.tools[2].url`) and says what is accepted.
 *
 *   tools          built-in names and webhook tools {name, description, parameters, url, timeout_ms}
 *   hold_audio     builtin:hold (default), none, wav:<path>
 *   tool_hold_ms   how long a tool runs before the caller hears hold audio
 *   idle           {reprompt_after_ms, hangup_after_ms}
 *
 * Each setting is kept as written (as every bot field is, src/dialects/): a webhook tool's `timeout_ms`
 * stays absent when left out (`webhookTimeoutMs` reads its default). Nothing here reads the
 * configuration or the disk, and nothing of the rest of src/ is imported (the dialect registry declares
 * these fields with these rules, src/dialects/bot/tools.ts): a source passes its own rules for a
 * webhook's host and a WAV file's place (`ToolPolicy`; a tenant's are BOT_URL_ALLOWED_HOSTS and
 * BOT_WAV_DIR).
 */
import { schemaProblem } from './schema.js';

export const BUILTIN_TOOLS = ['end_call', 'consult', 'conference', 'send_dtmf', 'send_message'] as const;
export type BuiltinToolName = (typeof BUILTIN_TOOLS)[number];

/** A tool the bridge calls over HTTP: a signed POST to `url` (src/tools/webhook.ts), as written. */
export interface WebhookTool {
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the arguments, `type: "object"`. */
  readonly parameters: Readonly<Record<string, unknown>>;
  /** http:// or https://; may carry credentials (the bot is sealed at rest, reads mask it). */
  readonly url: string;
  /** Absent: TOOL_LIMITS.timeoutDefaultMs. */
  readonly timeout_ms?: number;
}

export type ToolItem = BuiltinToolName | WebhookTool;

/** `idle`, as written: either bound may be left out (no reprompt, or no hang-up). */
export interface IdlePolicy {
  readonly reprompt_after_ms?: number;
  readonly hangup_after_ms?: number;
}

export const TOOL_LIMITS = {
  tools: 32,
  nameChars: 64,
  descriptionChars: 1024,
  /** `parameters` as JSON text. */
  parametersBytes: 16_384,
  urlChars: 2048,
  timeoutMinMs: 100,
  timeoutMaxMs: 30_000,
  timeoutDefaultMs: 10_000,
  holdMsMax: 30_000,
  holdMsDefault: 1000,
  holdPathChars: 1024,
  idleMinMs: 1000,
  idleMaxMs: 3_600_000,
} as const;

export const DEFAULT_HOLD_AUDIO = 'builtin:hold';

const NAME = /^[a-z0-9_]{1,64}$/;
const WEBHOOK_KEYS = ['name', 'description', 'parameters', 'url', 'timeout_ms'] as const;
const IDLE_KEYS = ['reprompt_after_ms', 'hangup_after_ms'] as const;

/** What each setting accepts, as messages, the OpenAPI document and docs/configuration.md say it. */
export const TOOL_ACCEPTS = {
  tools: `an array of at most ${TOOL_LIMITS.tools} tools, each a built-in tool's name (${BUILTIN_TOOLS.join(', ')}) or a webhook tool {name, description, parameters, url, timeout_ms}, names unique`,
  name: `1 to ${TOOL_LIMITS.nameChars} characters of a-z, 0-9 and _, not a built-in tool's name, unique in the list`,
  description: `a string of 1 to ${TOOL_LIMITS.descriptionChars} characters`,
  parameters: `a JSON Schema object with "type": "object" (at most ${TOOL_LIMITS.parametersBytes} bytes as JSON; no pattern or patternProperties)`,
  url: `an http:// or https:// URL of at most ${TOOL_LIMITS.urlChars} characters`,
  timeoutMs: `an integer from ${TOOL_LIMITS.timeoutMinMs} to ${TOOL_LIMITS.timeoutMaxMs} (default ${TOOL_LIMITS.timeoutDefaultMs})`,
  holdAudio: `builtin:hold (default), none, or wav:<path>`,
  toolHoldMs: `an integer from 0 to ${TOOL_LIMITS.holdMsMax} (default ${TOOL_LIMITS.holdMsDefault})`,
  idle: `an object {reprompt_after_ms, hangup_after_ms}, each an integer from ${TOOL_LIMITS.idleMinMs} to ${TOOL_LIMITS.idleMaxMs}, at least one given, the hang-up after the reprompt`,
} as const;

/** A source's own rules for what a setting may point at; undefined: anything well-formed. */
export interface ToolPolicy {
  /** Why a webhook's URL may not be called: what is accepted, and the URL as a message may show it. */
  readonly webhookUrlProblem?: (
    url: string,
  ) => { readonly accepts: string; readonly shown: string } | undefined;
  /** Why a hold WAV file's path may not be read (what is accepted), or undefined. */
  readonly wavPathProblem?: (path: string) => string | undefined;
}

export interface SettingProblem {
  readonly field: string;
  /** One line, starting with the field's name. */
  readonly message: string;
}

export type Checked<T> = { readonly value: T } | { readonly problem: SettingProblem };

const problem = (field: string, message: string): { problem: SettingProblem } => ({
  problem: { field, message: `${field} ${message}` },
});

/** `tools`: the list, every item checked; the first problem found is answered. */
export function checkTools(value: unknown, field: string, policy: ToolPolicy = {}): Checked<ToolItem[]> {
  if (!Array.isArray(value)) return problem(field, `must be ${TOOL_ACCEPTS.tools}, got ${kindOf(value)}`);
  if (value.length > TOOL_LIMITS.tools)
    return problem(field, `must be ${TOOL_ACCEPTS.tools}, got ${value.length} tools`);
  const out: ToolItem[] = [];
  const names = new Set<string>();
  for (const [i, item] of value.entries()) {
    const at = `${field}[${i}]`;
    const checked = checkItem(item, at, policy);
    if ('problem' in checked) return checked;
    const name = typeof checked.value === 'string' ? checked.value : checked.value.name;
    if (names.has(name))
      return problem(
        `${at}${typeof item === 'string' ? '' : '.name'}`,
        `repeats the tool name "${name}"; names must be unique in ${field}`,
      );
    names.add(name);
    out.push(checked.value);
  }
  return { value: out };
}

function checkItem(item: unknown, at: string, policy: ToolPolicy): Checked<ToolItem> {
  if (typeof item === 'string') {
    if ((BUILTIN_TOOLS as readonly string[]).includes(item)) return { value: item as BuiltinToolName };
    return problem(
      at,
      `must be a built-in tool's name (${BUILTIN_TOOLS.join(', ')}) or a webhook tool object, got ${shortText(item)}`,
    );
  }
  if (typeof item !== 'object' || item === null || Array.isArray(item))
    return problem(
      at,
      `must be a built-in tool's name or a webhook tool {${WEBHOOK_KEYS.join(', ')}}, got ${kindOf(item)}`,
    );
  const o = item as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!(WEBHOOK_KEYS as readonly string[]).includes(k))
      return problem(
        `${at}.${k.slice(0, 64)}`,
        `is not a field of a webhook tool; accepted: ${WEBHOOK_KEYS.join(', ')}`,
      );
  }
  const name = o.name;
  if (typeof name !== 'string' || !NAME.test(name) || (BUILTIN_TOOLS as readonly string[]).includes(name))
    return problem(
      `${at}.name`,
      `must be ${TOOL_ACCEPTS.name}, got ${typeof name === 'string' ? shortText(name) : kindOf(name)}`,
    );
  const description = o.description;
  if (
    typeof description !== 'string' ||
    description.length === 0 ||
    description.length > TOOL_LIMITS.descriptionChars
  )
    return problem(`${at}.description`, `must be ${TOOL_ACCEPTS.description}, got ${lengthOf(description)}`);
  const parameters = checkParameters(o.parameters, `${at}.parameters`);
  if ('problem' in parameters) return parameters;
  const url = checkWebhookUrl(o.url, `${at}.url`, policy);
  if ('problem' in url) return url;
  const t = o.timeout_ms;
  if (t !== undefined && t !== null && !isInt(t, TOOL_LIMITS.timeoutMinMs, TOOL_LIMITS.timeoutMaxMs))
    return problem(`${at}.timeout_ms`, `must be ${TOOL_ACCEPTS.timeoutMs}, got ${shortNumber(t)}`);
  return {
    value: {
      name,
      description,
      parameters: parameters.value,
      url: url.value,
      ...(typeof t === 'number' && { timeout_ms: t }),
    },
  };
}

function checkParameters(v: unknown, field: string): Checked<Record<string, unknown>> {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return problem(field, `must be ${TOOL_ACCEPTS.parameters}, got ${kindOf(v)}`);
  const text = JSON.stringify(v);
  if (Buffer.byteLength(text) > TOOL_LIMITS.parametersBytes)
    return problem(field, `must be ${TOOL_ACCEPTS.parameters}, got ${Buffer.byteLength(text)} bytes`);
  if ((v as Record<string, unknown>).type !== 'object')
    return problem(field, `must be ${TOOL_ACCEPTS.parameters}: its "type" must be "object"`);
  const why = schemaProblem(v);
  if (why !== undefined) return problem(field, `must be ${TOOL_ACCEPTS.parameters}: ${why.slice(0, 200)}`);
  // A copy of its own: the stored bot never shares an object with the request it came from.
  return { value: JSON.parse(text) as Record<string, unknown> };
}

function checkWebhookUrl(v: unknown, field: string, policy: ToolPolicy): Checked<string> {
  if (typeof v !== 'string' || v.length === 0 || v.length > TOOL_LIMITS.urlChars)
    return problem(field, `must be ${TOOL_ACCEPTS.url}, got ${lengthOf(v)}`);
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return problem(field, `must be ${TOOL_ACCEPTS.url}, got ${shownUrl(v)}`);
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.host === '')
    return problem(field, `must be ${TOOL_ACCEPTS.url}, got ${shownUrl(v)}`);
  const why = policy.webhookUrlProblem?.(v);
  if (why !== undefined) return problem(field, `must be ${why.accepts}, got ${why.shown}`);
  return { value: v };
}

/** `hold_audio`. */
export function checkHoldAudio(value: unknown, field: string, policy: ToolPolicy = {}): Checked<string> {
  if (value === 'builtin:hold' || value === 'none') return { value };
  if (typeof value === 'string' && value.startsWith('wav:')) {
    const path = value.slice('wav:'.length);
    if (path.length === 0 || path.length > TOOL_LIMITS.holdPathChars || path.includes('\u0000'))
      return problem(
        field,
        `must be ${TOOL_ACCEPTS.holdAudio} (a path of 1 to ${TOOL_LIMITS.holdPathChars} characters)`,
      );
    const why = policy.wavPathProblem?.(path);
    if (why !== undefined) return problem(field, `must be ${why}`);
    return { value };
  }
  return problem(
    field,
    `must be ${TOOL_ACCEPTS.holdAudio}, got ${typeof value === 'string' ? shortText(value) : kindOf(value)}`,
  );
}

/** `tool_hold_ms`. */
export function checkToolHoldMs(value: unknown, field: string): Checked<number> {
  if (isInt(value, 0, TOOL_LIMITS.holdMsMax)) return { value };
  return problem(field, `must be ${TOOL_ACCEPTS.toolHoldMs}, got ${shortNumber(value)}`);
}

/** `idle`. */
export function checkIdle(value: unknown, field: string): Checked<IdlePolicy> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return problem(field, `must be ${TOOL_ACCEPTS.idle}, got ${kindOf(value)}`);
  const o = value as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!(IDLE_KEYS as readonly string[]).includes(k))
      return problem(
        `${field}.${k.slice(0, 64)}`,
        `is not a field of idle; accepted: ${IDLE_KEYS.join(', ')}`,
      );
  }
  const out: { reprompt_after_ms?: number; hangup_after_ms?: number } = {};
  for (const key of IDLE_KEYS) {
    const v = o[key];
    if (v === undefined || v === null) continue;
    if (!isInt(v, TOOL_LIMITS.idleMinMs, TOOL_LIMITS.idleMaxMs))
      return problem(
        `${field}.${key}`,
        `must be an integer from ${TOOL_LIMITS.idleMinMs} to ${TOOL_LIMITS.idleMaxMs}, got ${shortNumber(v)}`,
      );
    out[key] = v;
  }
  const { reprompt_after_ms: reprompt, hangup_after_ms: hangup } = out;
  if (reprompt === undefined && hangup === undefined)
    return problem(field, `must be ${TOOL_ACCEPTS.idle}, got neither bound`);
  if (reprompt !== undefined && hangup !== undefined && hangup <= reprompt)
    return problem(
      `${field}.hangup_after_ms`,
      `must be above reprompt_after_ms (${reprompt}): the caller is asked before the call ends, got ${hangup}`,
    );
  return { value: out };
}

/** How long the bridge waits for a webhook tool. */
export function webhookTimeoutMs(tool: WebhookTool): number {
  return tool.timeout_ms ?? TOOL_LIMITS.timeoutDefaultMs;
}

function isInt(v: unknown, min: number, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

function kindOf(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return 'a string';
  return `a ${typeof v}`;
}

function lengthOf(v: unknown): string {
  return typeof v === 'string' ? `${v.length} characters` : kindOf(v);
}

/** A name-like value quoted only when short and plainly not a URL or secret. */
function shortText(v: string): string {
  if (/@|:\/\//.test(v)) return '(not shown)';
  return JSON.stringify(v.length > 32 ? `${v.slice(0, 32)}…` : v);
}

function shortNumber(v: unknown): string {
  return typeof v === 'number' ? String(v) : kindOf(v);
}

/** A URL as a message shows it: scheme, host and path only (its credentials and query may be secrets). */
function shownUrl(v: string): string {
  try {
    const u = new URL(v);
    if (u.host !== '' && !(v.includes('@') && u.username === '' && u.password === ''))
      return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {}
  return /@|:\/\//.test(v) ? '(not a URL it can call)' : JSON.stringify(v.slice(0, 64));
}
