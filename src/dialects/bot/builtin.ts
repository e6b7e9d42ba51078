/**
 * The `builtin` bot dialect, declared: bots inside the bridge (`builtin:echo`, `builtin:tone[:hz]`,
 * `builtin:wav:<path>`), PCM16 at BOT_SAMPLE_RATE. It takes a `url` alone, and is the dialect of a
 * builtin: URL given without one. Its legs: src/media/bot/builtin.ts and wav.ts.
 */
import type { BotDialectDecl } from '../types.js';

export const builtin = {
  name: 'builtin',
  url: {
    kind: 'builtin',
    defaultForKind: true,
    doc: "`builtin:echo` sends the caller's audio back after `ECHO_DELAY_MS`; `builtin:tone` plays a tone (440 Hz unless given); `builtin:wav:<path>` plays a WAV file once (any rate, depth or channels, mixed to mono)",
  },
  fields: [],
  summary: 'a built-in bot',
} as const satisfies BotDialectDecl;
