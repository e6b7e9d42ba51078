/**
 * The `bridge` bot dialect, declared: our own protocol (docs/protocol.md) toward a bot's WebSocket
 * server, PCM16 at BOT_SAMPLE_RATE. It takes a `url` and the tool fields (its bot calls tools with
 * `tool_call`), and is the dialect of a ws:// or wss:// URL given without one. Its leg: src/media/bot/bridge.ts.
 */
import type { BotDialectDecl } from '../types.js';
import { TOOL_FIELDS } from './tools.js';

export const bridge = {
  name: 'bridge',
  url: {
    kind: 'ws',
    defaultForKind: true,
    doc: 'A `bridge` ws bot gets the protocol of docs/protocol.md at `BOT_SAMPLE_RATE`',
  },
  fields: [...TOOL_FIELDS],
  summary: 'our own protocol (docs/protocol.md)',
} as const satisfies BotDialectDecl;
