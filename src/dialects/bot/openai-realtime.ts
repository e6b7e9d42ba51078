/**
 * The `openai-realtime` bot dialect, declared: the bridge as a client of an OpenAI Realtime server (the
 * GA interface), with the speech fields (src/dialects/bot/speech.ts) and its own `turn_detection`. Its
 * leg: src/media/bot/openai-realtime.ts; its stand-in: src/emulator/realtime/.
 */
import { enumField } from '../fields.js';
import type { BotDialectDecl } from '../types.js';
import { apiKey, dtmf, instructions, model, voice } from './speech.js';
import { TOOL_FIELDS } from './tools.js';

export const TURN_DETECTIONS = ['server_vad', 'semantic_vad', 'none'] as const;
export type TurnDetection = (typeof TURN_DETECTIONS)[number];

export const turnDetection = enumField({
  key: 'turnDetection',
  example: 'semantic_vad',
  rest: 'turn_detection',
  values: TURN_DETECTIONS,
  dflt: 'server_vad',
  env: {
    name: 'BOT_TURN_DETECTION',
    type: 'text',
    accepts: '`server_vad`, `semantic_vad`, `none`',
    defaultRule: '`server_vad`',
    description:
      'how the server finds the end of a turn (`none`: no turn detection). Refused with another dialect.',
  },
});

export const openaiRealtime = {
  name: 'openai-realtime',
  url: { kind: 'ws' },
  fields: [apiKey, model, instructions, voice, turnDetection, dtmf, ...TOOL_FIELDS],
  summary: 'as a client of an OpenAI Realtime server',
} as const satisfies BotDialectDecl;
