/**
 * Picks the bot leg: the tenant's `bot_url` when it has one, else `BOT_URL`; a ws bot, or one of the
 * built-ins.
 */
import type { BridgeContext } from '../../context.js';
import { BridgeError, isBridgeError } from '../../errors.js';
import { displayUrl, type Logger } from '../../log.js';
import type { PacingLoop } from '../pacing-loop.js';
import { wavPath, wavPathInside } from './bot-url.js';
import { EchoBot, ToneBot } from './builtin.js';
import type { BotCall, BotHandler, BotLeg } from './types.js';
import { loadWav, WavBot } from './wav.js';
import { WsBot } from './ws-bot.js';

export interface BotDeps {
  readonly ctx: BridgeContext;
  readonly loop: PacingLoop;
  readonly log: Logger;
  /** The tenant's own bot (its stored `bot_url`, checked when stored); undefined: `BOT_URL`. */
  readonly tenantBotUrl?: string | undefined;
}

export const DEFAULT_TONE_HZ = 440;

export function createBotLeg(call: BotCall, handler: BotHandler, deps: BotDeps): BotLeg {
  const { config, metrics } = deps.ctx;
  const own = deps.tenantBotUrl !== undefined;
  const url = deps.tenantBotUrl ?? config.botUrl;
  const rate = config.botSampleRate;
  if (url.startsWith('ws://') || url.startsWith('wss://')) {
    try {
      return new WsBot(call, handler, {
        url,
        botRate: rate,
        retries: config.botRetries,
        retryBaseMs: config.botRetryBaseMs,
        connectTimeoutMs: config.botConnectTimeoutMs,
        maxPayloadBytes: config.botMaxPayloadBytes,
        highWaterBytes: config.socketHighWaterBytes,
        metrics,
        log: deps.log,
      });
    } catch (err) {
      // ws quotes the URL in its message, credentials and all: the bot is named by its display form only.
      throw new BridgeError(
        'bot_unavailable',
        `bot ${displayUrl(url)} cannot be dialled (${(err as Error).name}: not a URL the WebSocket client accepts); check ${own ? "the tenant's bot_url" : 'BOT_URL'}`,
      );
    }
  }
  if (url === 'builtin:echo') return new EchoBot(handler, deps.loop, config.echoDelayMs);
  if (url.startsWith('builtin:tone')) {
    const hz =
      url.length > 'builtin:tone:'.length ? Number(url.slice('builtin:tone:'.length)) : DEFAULT_TONE_HZ;
    return new ToneBot(handler, deps.loop, rate, hz);
  }
  const wav = wavPath(url);
  if (wav !== undefined) {
    if (!own) return new PendingWavBot(wav, handler, deps);
    // Checked again here: BOT_WAV_DIR may have changed (or gone) since the tenant stored its bot_url.
    const inside = wavPathInside(wav, config.botWavDir);
    if (inside === undefined) {
      throw new BridgeError(
        'bot_unavailable',
        "the tenant's bot_url names a WAV file outside BOT_WAV_DIR (or the bridge has none); PUT /v1/media-stream with another bot_url",
      );
    }
    return new PendingWavBot(inside, handler, deps);
  }
  // Config validation admits nothing else.
  throw new Error(`unsupported bot URL ${displayUrl(url)}`);
}

/** A WAV bot while its file loads (once per path and rate; cached after). */
class PendingWavBot implements BotLeg {
  #bot: BotLeg | undefined;
  #ended = false;

  constructor(path: string, handler: BotHandler, deps: BotDeps) {
    const rate = deps.ctx.config.botSampleRate;
    loadWav(path, rate).then(
      (samples) => {
        if (!this.#ended) this.#bot = new WavBot(handler, deps.loop, rate, samples);
      },
      (err: unknown) => {
        if (this.#ended) return;
        deps.ctx.metrics.botConnects.labels('failed').inc();
        const e = isBridgeError(err)
          ? err
          : new BridgeError('bot_unavailable', `cannot play ${path}: ${(err as Error).message}`);
        handler.botFailed(e);
      },
    );
  }

  audio(): void {}
  dtmf(): void {}
  mark(): void {}
  end(reason: string): void {
    this.#ended = true;
    this.#bot?.end(reason);
  }
}
