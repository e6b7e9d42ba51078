/**
 * The stand-ins of the bot dialects that speak to a vendor's server: a local server of that dialect's
 * protocol each, for bots and tests without the vendor's key. Each is declared beside its server
 * (src/emulator/<vendor>/stand-in.ts) and listed here under its dialect's registered name (src/dialects/);
 * `npm run bot-emulator -- --dialect <name>` starts one (src/cli/stand-in-cli.ts), and
 * `npm run realtime-emulator` is the `openai-realtime` one under its own name.
 */
import type { BotDialectName } from '../dialects/index.js';
import { deepgramAgentStandIn } from './deepgram-agent/stand-in.js';
import { elevenLabsAgentStandIn } from './elevenlabs-agent/stand-in.js';
import { geminiLiveStandIn } from './gemini-live/stand-in.js';
import { realtimeStandIn } from './realtime/stand-in.js';
import type { StandIn } from './stand-in.js';
import { ultravoxStandIn } from './ultravox/stand-in.js';

export type * from './stand-in.js';

/** The name a stand-in is listed under: its bot dialect's (a stand-in comes with a registered dialect). */
export type StandInName = BotDialectName;

export const STAND_INS: { readonly [N in StandInName]?: StandIn } = {
  'openai-realtime': realtimeStandIn,
  'elevenlabs-agent': elevenLabsAgentStandIn,
  ultravox: ultravoxStandIn,
  'gemini-live': geminiLiveStandIn,
  'deepgram-agent': deepgramAgentStandIn,
};
