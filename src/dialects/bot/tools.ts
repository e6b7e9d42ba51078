/**
 * The tool fields (CONTRACT §10), declared for the dialects that carry tools to list: `tools`,
 * `hold_audio`, `tool_hold_ms` and `idle`, with their env twins (`BOT_TOOLS` and `BOT_IDLE` as JSON,
 * `BOT_TOOL_HOLD_MS` a whole number). Their rules and messages are src/tools/settings.ts's, which
 * imports nothing of the rest of src/ (ajv only), so this folder stays below everything that reads it.
 * A tenant's webhook URLs are held to its `dialled` rule (BOT_URL_ALLOWED_HOSTS) and a hold WAV file to
 * its `readable` one (BOT_WAV_DIR); reads show each webhook URL masked.
 */
import {
  BUILTIN_TOOLS,
  type Checked,
  checkHoldAudio,
  checkIdle,
  checkToolHoldMs,
  checkTools,
  type IdlePolicy,
  TOOL_ACCEPTS,
  type ToolItem,
  type ToolPolicy,
} from '../../tools/settings.js';
import type { BotFieldDecl, FieldContext, FieldProblem } from '../types.js';

/** The source's rules as the tool settings take them. */
function policy(context: FieldContext): ToolPolicy {
  const { dialled, readable } = context;
  return {
    ...(dialled !== undefined && { webhookUrlProblem: dialled }),
    ...(readable !== undefined && { wavPathProblem: readable }),
  };
}

const problemOf = (c: Checked<unknown>): FieldProblem | undefined => ('problem' in c ? c.problem : undefined);
const checkedValue = <V>(c: Checked<V>): V => {
  if ('problem' in c) throw new Error(c.problem.message);
  return c.value;
};

export const tools: BotFieldDecl<'tools', readonly ToolItem[]> = {
  key: 'tools',
  rest: 'tools',
  // Built-ins only: a webhook tool needs a tool_secret beside the bot (control/media-stream.ts), which a
  // bot's fields alone do not carry (test/tools/settings.test.ts stores one and reads it back masked).
  example: ['end_call', 'consult'],
  accepts: TOOL_ACCEPTS.tools,
  schema: { type: 'array', items: {} },
  note: 'docs/tools.md; webhook URLs read back masked',
  env: {
    name: 'BOT_TOOLS',
    type: 'text',
    accepts: 'a JSON array of tools',
    description: `what the model may do on the call (docs/tools.md): built-in tools by name (${BUILTIN_TOOLS.map((t) => `\`${t}\``).join(', ')}) and webhook tools \`{name, description, parameters, url, timeout_ms}\`. Unset: none. A webhook's URL is not limited by \`BOT_URL_ALLOWED_HOSTS\` here.`,
  },
  envValue: 'json',
  check: (value, field, context) => problemOf(checkTools(value, field, policy(context))),
  value: (checked) => checkedValue(checkTools(checked, 'tools')),
  shown: (value, maskUrl) =>
    value.map((t) => (typeof t === 'string' ? t : { ...structuredClone(t), url: maskUrl(t.url) })),
};

export const holdAudio: BotFieldDecl<'holdAudio', string> = {
  key: 'holdAudio',
  rest: 'hold_audio',
  example: 'none',
  accepts: TOOL_ACCEPTS.holdAudio,
  schema: { type: 'string' },
  env: {
    name: 'BOT_HOLD_AUDIO',
    type: 'text',
    accepts: '`builtin:hold`, `none`, `wav:<path>`',
    defaultRule: '`builtin:hold`',
    description:
      'what the caller hears while a tool runs longer than `BOT_TOOL_HOLD_MS`: a soft built-in chime, nothing, or a WAV file (looped).',
  },
  check: (value, field, context) => problemOf(checkHoldAudio(value, field, policy(context))),
};

export const toolHoldMs: BotFieldDecl<'toolHoldMs', number> = {
  key: 'toolHoldMs',
  rest: 'tool_hold_ms',
  example: 1500,
  accepts: TOOL_ACCEPTS.toolHoldMs,
  schema: { type: 'integer' },
  env: {
    name: 'BOT_TOOL_HOLD_MS',
    type: 'text',
    accepts: 'an integer from 0 to 30000',
    defaultRule: '1000',
    description: 'how long a tool runs before the caller hears the hold audio.',
  },
  envValue: 'integer',
  check: (value, field) => problemOf(checkToolHoldMs(value, field)),
};

export const idle: BotFieldDecl<'idle', IdlePolicy> = {
  key: 'idle',
  rest: 'idle',
  example: { reprompt_after_ms: 8000, hangup_after_ms: 20_000 },
  accepts: TOOL_ACCEPTS.idle,
  schema: {
    type: 'object',
    properties: { reprompt_after_ms: { type: 'integer' }, hangup_after_ms: { type: 'integer' } },
  },
  env: {
    name: 'BOT_IDLE',
    type: 'text',
    accepts: 'JSON `{reprompt_after_ms, hangup_after_ms}`',
    description:
      'the idle policy: caller and bot both silent this long, the model is asked to speak, then the call ends. Unset: off.',
  },
  envValue: 'json',
  check: (value, field) => problemOf(checkIdle(value, field)),
  value: (checked) => checkedValue(checkIdle(checked, 'idle')),
};

/** Every tool field, for a dialect that carries tools. */
export const TOOL_FIELDS = [tools, holdAudio, toolHoldMs, idle] as const;
