/**
 * The `ultravox` bot dialect, declared: the bridge creates an Ultravox call on the `serverWebSocket`
 * medium (`POST {api_base}/api/calls` with `X-API-Key`) at the caller's own rates and joins it at the
 * `joinUrl` the answer gives, so it takes no `url`. The speech fields, the vendor's `settings` (merged
 * into the create-call body), `api_base` (default Ultravox's public API) and the tool fields. Its leg:
 * src/media/bot/ultravox.ts; its stand-in: src/emulator/ultravox/.
 */
import type { BotDialectDecl } from '../types.js';
import { apiBase, apiKey, dtmf, instructions, model, settings, voice } from './speech.js';
import { TOOL_FIELDS } from './tools.js';

/** Ultravox's public API: where calls are created unless `api_base` says otherwise. */
export const ULTRAVOX_API_BASE = 'https://api.ultravox.ai';

export const ultravox = {
  name: 'ultravox',
  url: {
    kind: 'none',
    doc: '`ultravox` takes none: it creates a call on `BOT_API_BASE` and joins the socket the answer names',
  },
  fields: [apiKey, model, instructions, voice, dtmf, settings, apiBase, ...TOOL_FIELDS],
  defaults: { apiBase: ULTRAVOX_API_BASE },
  summary: 'as a client of an Ultravox call it creates on the API and joins over a WebSocket',
} as const satisfies BotDialectDecl;
