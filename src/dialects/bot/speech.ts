/**
 * The fields speech-to-speech dialects share (CONTRACT §6, §9): a key, the model, its instructions, its
 * voice, and what a caller's digit becomes. A dialect opts in by listing them in its `fields`, all
 * (`SPEECH_FIELDS`) or one by one; each field is checked, documented and redacted the same way for all.
 */
import { enumField, secretField, stringField } from '../fields.js';

export const apiKey = secretField({
  key: 'apiKey',
  example: 'sk-example-0123456789abcdef',
  rest: 'api_key',
  max: 512,
  env: {
    name: 'BOT_API_KEY',
    type: 'secret',
    accepts: '1 to 512 characters, no spaces',
    description: "the key sent to the bot's server. Never printed. Refused with another dialect.",
  },
});

export const model = stringField({
  key: 'model',
  example: 'gpt-realtime',
  rest: 'model',
  min: 1,
  max: 128,
  env: {
    name: 'BOT_MODEL',
    type: 'text',
    accepts: '1 to 128 characters',
    description: "the model the bot's server runs. Refused with another dialect.",
  },
});

export const instructions = stringField({
  key: 'instructions',
  example: 'Answer in one sentence.',
  rest: 'instructions',
  min: 0,
  max: 16_384,
  env: {
    name: 'BOT_INSTRUCTIONS',
    type: 'text',
    accepts: 'at most 16384 characters',
    description: 'the instructions the model is given. Refused with another dialect.',
  },
});

export const voice = stringField({
  key: 'voice',
  example: 'alloy',
  rest: 'voice',
  min: 1,
  max: 64,
  env: {
    name: 'BOT_VOICE',
    type: 'text',
    accepts: '1 to 64 characters',
    description: 'the voice the model speaks in. Refused with another dialect.',
  },
});

/**
 * What a speech bot does with a caller's digit: `text` (default) adds a user text "[DTMF 5]" that the
 * model takes in with the next turn; `respond` adds it and asks for a response at once; `ignore` drops it.
 */
export const DTMF_MODES = ['text', 'respond', 'ignore'] as const;
export type DtmfMode = (typeof DTMF_MODES)[number];

export const dtmf = enumField({
  key: 'dtmf',
  example: 'respond',
  rest: 'dtmf',
  values: DTMF_MODES,
  dflt: 'text',
  env: {
    name: 'BOT_DTMF',
    type: 'text',
    accepts: '`text`, `respond`, `ignore`',
    defaultRule: '`text`',
    description:
      "a caller's digit as a user text item `[DTMF 5]` the model takes in with the next turn (`text`), the same and a response at once (`respond`), or dropped (`ignore`).",
  },
});

/** Every field above, for a dialect that takes them all. */
export const SPEECH_FIELDS = [apiKey, model, instructions, voice, dtmf] as const;
