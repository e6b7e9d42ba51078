/**
 * What a bot dialect's module gives the media path: its declaration (src/dialects/bot/), the format its
 * leg speaks, and its leg for one call. Each module under src/media/bot/ exports one; src/media/dialects.ts
 * lists them, and bot/index.ts picks one by the call's settings, once a call (nothing here is per chunk).
 */
import type { BotSettings } from '../../config/bot-settings.js';
import type { BridgeContext } from '../../context.js';
import type { BotDialectDecl } from '../../dialects/index.js';
import type { Logger } from '../../log.js';
import type { Format } from '../../pipeline/types.js';
import type { SessionFormat } from '../format.js';
import type { PacingLoop } from '../pacing-loop.js';
import type { BotCall, BotFormats, BotLeg, BotTools, CallerPort } from './types.js';
import type { WsLinkOptions } from './ws-link.js';

/** What a call's bot leg is made with. */
export interface BotDeps {
  readonly ctx: BridgeContext;
  readonly loop: PacingLoop;
  readonly log: Logger;
}

/** One call's bot, as its dialect's `create` is given it. */
export interface BotLegSetup {
  readonly settings: BotSettings;
  /** The tenant chose it (its URLs were checked again against the configuration), else the environment did. */
  readonly own: boolean;
  /** The bot's audio (`formats.fromBot`), and the caller's toward it too where the two ways agree. */
  readonly format: Format;
  /** The leg's audio each way, as `format` gave it. */
  readonly formats: BotFormats;
  /**
   * For a dialect of ws URLs: the socket's options (the URL, redials, timeouts, bounds) from the
   * configuration; a dialect may dial another URL or add headers.
   */
  readonly link: WsLinkOptions;
  readonly deps: BotDeps;
  /** The call's tools, for a dialect that carries them (src/media/call-tools.ts); undefined: none. */
  readonly tools?: BotTools | undefined;
}

export interface BotDialect {
  readonly decl: BotDialectDecl;
  /**
   * The audio the leg speaks for a caller in `caller`'s format (`botRate`: BOT_SAMPLE_RATE): one format
   * both ways, or a pair where the two ways differ (a vendor told the caller's input and output rates
   * apart, as Deepgram's `audio.input` and `audio.output`), the codec then the same both ways.
   */
  format(settings: BotSettings, caller: SessionFormat, botRate: number): Format | BotFormats;
  /**
   * Its formats are known only once it is connected (an ElevenLabs agent names them in its first
   * message): the session opens the call's legs when the leg reports them (CallerPort.formats), holding
   * the caller's audio until then; `format` is only the guess given to `create` and to the call's tools.
   */
  readonly formatsFromBot?: true;
  /**
   * The leg for one call. May throw (a URL the WebSocket client refuses): the caller turns that into a
   * `bot_unavailable` naming the bot by its display form.
   */
  create(call: BotCall, port: CallerPort, setup: BotLegSetup): BotLeg;
  /**
   * Whether the leg's audio is a live stream, made at real time as it is sent (an echo of the caller's
   * audio): the outbound writer paces it on its own timeline (src/audio/playout.ts). Unset: a bot's
   * replies, paced from the first chunk of each.
   */
  live?(settings: BotSettings): boolean;
}
