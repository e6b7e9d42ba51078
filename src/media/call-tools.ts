/**
 * What a session sees of its call's tools (CONTRACT §10): the model acting on the call, hold audio and
 * the idle policy, all run by src/tools/, which the session reaches only through `BridgeContext.tools`
 * (app.ts sets it; media/ never imports src/tools/). A call whose bot has no tools and no idle policy
 * gets none, and its lines are untouched.
 *
 * Where the tools sit on the call's two lines: as one step on each, each calling only the next one.
 *
 *   bot -> caller:  bot dialect -> CallTools.port -> ToCaller -> ...   (the bot's audio seen; hold audio
 *                                                                       and the tools' marks, digits and
 *                                                                       hang-up put in)
 *   caller -> bot:  ... -> ToBot -> CallTools.attach(bot dialect)      (the caller's speech seen; the
 *                                                                       tools' own marks taken out)
 */

import type { BotSettings } from '../config/bot-settings.js';
import type { Logger } from '../log.js';
import type { Format } from '../pipeline/types.js';
import type { SessionInfo } from '../state/types.js';
import type { BotLeg, BotTools, CallerPort } from './bot/types.js';
import type { PacingLoop } from './pacing-loop.js';

export interface CallToolsSetup {
  readonly info: SessionInfo;
  readonly settings: BotSettings;
  /** The tenant chose the bot (its webhook hosts and WAV path are checked again against the config). */
  readonly own: boolean;
  /** The bot leg's audio format, both ways. */
  readonly format: Format;
  /** The provider's dialect carries digits toward the provider (`send_dtmf`). */
  readonly carriesDigits: boolean;
  /** The call's way to the caller (ToCaller). */
  readonly port: CallerPort;
  readonly loop: PacingLoop;
  readonly log: Logger;
}

export interface CallTools {
  /** The bot's way to the caller: the bot dialect is given this instead of the session's. */
  readonly port: CallerPort;
  /** What the bot dialect declares and calls; undefined when the bot has only an idle policy. */
  readonly bot: BotTools | undefined;
  /** The bot leg the session drives in place of `bot` (the dialect's own leg, wrapped). */
  attach(bot: BotLeg): BotLeg;
}

/** Opens a call's tools; undefined when its bot has none and no idle policy. */
export type OpenCallTools = (setup: CallToolsSetup) => CallTools | undefined;
