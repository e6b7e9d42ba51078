/**
 * The stand-ins of the bot dialects that speak to a vendor's server: a local server of that dialect's
 * protocol each, for bots and tests without the vendor's key. Each is declared beside its server
 * (src/emulator/<vendor>/stand-in.ts) and listed here under its dialect's registered name (src/dialects/);
 * `npm run bot-emulator -- --dialect <name>` starts one (src/cli/stand-in-cli.ts), and
 * `npm run realtime-emulator` is the `openai-realtime` one under its own name.
 */
import type { BotDialectName } from '../dialects/index.js';
import { realtimeStandIn } from './realtime/stand-in.js';
import type { StandIn } from './stand-in.js';

export type * from './stand-in.js';

export const STAND_INS: { readonly [N in BotDialectName]?: StandIn } = {
  'openai-realtime': realtimeStandIn,
};
