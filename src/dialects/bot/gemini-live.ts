/**
 * The `gemini-live` bot dialect, declared: the bridge as a client of Google's Gemini Live API
 * (`BidiGenerateContent` over a WebSocket), its public endpoint by default. It takes the speech fields
 * (the key, the model, the system instruction, a prebuilt voice's name, what a digit becomes) and the
 * tool fields (src/dialects/bot/tools.ts): the call's tools are declared in `setup.tools`. Its leg:
 * src/media/bot/gemini-live.ts; its stand-in: src/emulator/gemini-live/.
 */
import type { BotDialectDecl } from '../types.js';
import { apiKey, dtmf, instructions, model, voice } from './speech.js';
import { TOOL_FIELDS } from './tools.js';

export const GEMINI_LIVE_URL =
  'wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent';

/** The model a bot gets when it names none: Google's native-audio Live model. */
export const GEMINI_LIVE_MODEL = 'gemini-2.5-flash-native-audio-preview-12-2025';

export const geminiLive = {
  name: 'gemini-live',
  url: {
    kind: 'ws',
    default: GEMINI_LIVE_URL,
    doc: "a `gemini-live` bot dials Google's Live API endpoint when `BOT_URL` is not set",
  },
  fields: [apiKey, model, instructions, voice, dtmf, ...TOOL_FIELDS],
  summary: "as a client of Google's Gemini Live API",
} as const satisfies BotDialectDecl;
