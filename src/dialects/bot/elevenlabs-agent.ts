/**
 * The `elevenlabs-agent` bot dialect, declared: the bridge as a client of an ElevenLabs Agents
 * conversation WebSocket, for the agent `agent_id` (required). `url` defaults to ElevenLabs' public
 * endpoint; with an `api_key`, each dial first asks `{api_base}/v1/convai/conversation/get-signed-url`
 * for a signed URL (a private agent). `instructions` and `voice` go as the conversation's overrides
 * (the agent must allow them), and `dtmf` says what a digit becomes. The agent's model, language and
 * audio formats are the agent's own, and so are its client tools: the call's `tools` (src/dialects/bot/
 * tools.ts) say which of them the bridge runs. Its leg: src/media/bot/elevenlabs-agent.ts.
 */
import type { BotDialectDecl } from '../types.js';
import { agentId, apiBase, apiKey, dtmf, instructions, voice } from './speech.js';
import { TOOL_FIELDS } from './tools.js';

/** ElevenLabs' conversation WebSocket: the bridge adds `agent_id` to its query. */
export const ELEVENLABS_CONVERSATION_URL = 'wss://api.elevenlabs.io/v1/convai/conversation';

/** ElevenLabs' REST API, asked for a signed URL when the bot has an `api_key` and no `api_base`. */
export const ELEVENLABS_API_BASE = 'https://api.elevenlabs.io';

export const elevenlabsAgent = {
  name: 'elevenlabs-agent',
  url: {
    kind: 'ws',
    default: ELEVENLABS_CONVERSATION_URL,
    doc: "an `elevenlabs-agent` bot is ElevenLabs' conversation socket unless given (`BOT_AGENT_ID` names the agent)",
  },
  fields: [agentId, apiKey, apiBase, instructions, voice, dtmf, ...TOOL_FIELDS],
  requires: ['agentId'],
  summary: 'as a client of an ElevenLabs Agents conversation',
} as const satisfies BotDialectDecl;
