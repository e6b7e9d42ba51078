/**
 * The `deepgram-agent` bot dialect, declared: the bridge as a client of Deepgram's Voice Agent
 * (`/v1/agent/converse`), its public endpoint by default. It takes the key, the instructions (the think
 * prompt), Deepgram's own `settings` (merged into its `Settings` message, where the tenant names the
 * listen, think and speak providers and their models in Deepgram's words) and what a digit becomes.
 * `model` and `voice` are not taken: Deepgram names a provider beside each model, and each provider its
 * model or voice under a field of its own, so the bridge would have to guess one; `settings` says it
 * exactly. It carries the call's tools (src/dialects/bot/tools.ts) as client-side functions. Its leg:
 * src/media/bot/deepgram-agent.ts; its stand-in: src/emulator/deepgram-agent/.
 */
import type { BotDialectDecl } from '../types.js';
import { apiKey, dtmf, instructions, settings } from './speech.js';
import { TOOL_FIELDS } from './tools.js';

export const DEEPGRAM_AGENT_URL = 'wss://agent.deepgram.com/v1/agent/converse';

export const deepgramAgent = {
  name: 'deepgram-agent',
  url: {
    kind: 'ws',
    default: DEEPGRAM_AGENT_URL,
    doc: `a \`deepgram-agent\` bot dials \`${DEEPGRAM_AGENT_URL}\` when \`BOT_URL\` is not set`,
  },
  fields: [apiKey, instructions, settings, dtmf, ...TOOL_FIELDS],
  summary: "as a client of Deepgram's Voice Agent",
} as const satisfies BotDialectDecl;
