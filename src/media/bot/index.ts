/**
 * Picks the bot leg for a call: the tenant's own bot when it has one, else the environment's, each as
 * `BotSettings` (src/config/bot-settings.ts), and the dialect module that speaks to it:
 *
 *   bridge            bridge.ts           our protocol to a ws bot, PCM16 at BOT_SAMPLE_RATE
 *   twilio            twilio.ts           Twilio Media Streams to a ws bot, µ-law 8 kHz
 *   openai-realtime   openai-realtime.ts  a client of an OpenAI Realtime server, G.711 8 kHz or PCM16 24 kHz
 *   builtin           builtin.ts, wav.ts  echo, tone and WAV bots, PCM16 at BOT_SAMPLE_RATE
 *
 * A tenant's bot is checked against the configuration again at each dial (it may have changed since it
 * was stored); one refused then, or one that cannot be read, fails the bot leg only: the call goes on
 * without a bot, as with one that cannot be reached, and never falls back to the environment's bot.
 */
import type { BotSettings } from '../../config/bot-settings.js';
import { tenantBotUrlProblem, wavPath, wavPathInside } from '../../config/bot-url.js';
import type { BridgeContext } from '../../context.js';
import { BridgeError } from '../../errors.js';
import { displayUrl, type Logger } from '../../log.js';
import type { Format } from '../../pipeline/types.js';
import type { SessionFormat } from '../format.js';
import type { PacingLoop } from '../pacing-loop.js';
import { BridgeBot, bridgeFormat } from './bridge.js';
import { EchoBot, ToneBot } from './builtin.js';
import { OpenAIRealtimeBot, realtimeFormat } from './openai-realtime.js';
import { TWILIO_FORMAT, TwilioBot } from './twilio.js';
import type { BotCall, BotLeg, CallerPort } from './types.js';
import { loadWav, NotWavError, WavBot } from './wav.js';
import type { WsLinkOptions } from './ws-link.js';

/** A call's bot: the settings to dial, and whether the tenant chose them; or a tenant bot that cannot be read. */
export type BotChoice =
  | { readonly settings: BotSettings; readonly own: boolean }
  | { readonly unreadable: true };

export interface BotDeps {
  readonly ctx: BridgeContext;
  readonly loop: PacingLoop;
  readonly log: Logger;
  readonly choice: BotChoice;
}

export const DEFAULT_TONE_HZ = 440;

/** The audio the call's bot leg speaks, both ways, for a caller in `caller`'s format. */
export function botFormat(
  choice: BotChoice,
  caller: SessionFormat,
  config: { readonly botSampleRate: number },
): Format {
  if ('unreadable' in choice) return bridgeFormat(config.botSampleRate);
  switch (choice.settings.dialect) {
    case 'twilio':
      return TWILIO_FORMAT;
    case 'openai-realtime':
      return realtimeFormat(caller);
    default:
      return bridgeFormat(config.botSampleRate);
  }
}

export function createBotLeg(call: BotCall, port: CallerPort, format: Format, deps: BotDeps): BotLeg {
  const { config, metrics } = deps.ctx;
  const { choice } = deps;
  if ('unreadable' in choice) {
    deps.log.warn(
      { tenant: call.tenant },
      "the tenant's stored bot cannot be unsealed with this STATE_SECRET_KEY: the call goes on without a bot",
    );
    return new FailedBot(
      port,
      deps,
      new BridgeError(
        'bot_unavailable',
        "the tenant's bot (bot or bot_url) cannot be read by this bridge instance; the call has no bot (PUT /v1/media-stream again, or ask the operator to check STATE_SECRET_KEY)",
      ),
    );
  }
  const { settings, own } = choice;
  const { url } = settings;
  const rate = config.botSampleRate;
  if (own) {
    // Checked again here: BOT_URL_ALLOWED_HOSTS, BOT_WAV_DIR or BOT_SAMPLE_RATE may have changed since
    // the tenant stored its bot.
    const problem = tenantBotUrlProblem(url, config);
    if (problem !== undefined) {
      deps.log.warn(
        { tenant: call.tenant, bot: problem.shown, accepts: problem.accepts },
        "the tenant's stored bot is refused by the current configuration: the call goes on without a bot",
      );
      return new FailedBot(
        port,
        deps,
        new BridgeError(
          'bot_unavailable',
          `the tenant's bot_url is refused by this bridge's configuration (bot_url must be ${problem.accepts}); PUT /v1/media-stream with another bot`,
        ),
      );
    }
  }
  if (settings.dialect !== 'builtin') {
    const link: WsLinkOptions = {
      url,
      retries: config.botRetries,
      retryBaseMs: config.botRetryBaseMs,
      connectTimeoutMs: config.botConnectTimeoutMs,
      maxPayloadBytes: config.botMaxPayloadBytes,
      highWaterBytes: config.socketHighWaterBytes,
      metrics,
      log: deps.log,
      clock: deps.ctx.clock,
    };
    try {
      switch (settings.dialect) {
        case 'twilio':
          return new TwilioBot(call, port, { ...link, parameters: settings.parameters });
        case 'openai-realtime':
          return new OpenAIRealtimeBot(call, port, {
            ...link,
            url: realtimeUrl(url, settings.model),
            ...(settings.apiKey !== undefined && { headers: { authorization: `Bearer ${settings.apiKey}` } }),
            format,
            model: settings.model,
            instructions: settings.instructions,
            voice: settings.voice,
            turnDetection: settings.turnDetection,
            dtmf: settings.dtmf,
          });
        default:
          return new BridgeBot(call, port, { ...link, botRate: rate });
      }
    } catch (err) {
      // ws quotes the URL in its message, credentials and all: the bot is named by its display form only.
      throw new BridgeError(
        'bot_unavailable',
        `bot ${displayUrl(url)} cannot be dialled (${(err as Error).name}: not a URL the WebSocket client accepts); check ${own ? "the tenant's bot" : 'BOT_URL'}`,
      );
    }
  }
  if (url === 'builtin:echo') return new EchoBot(port, deps.loop, config.echoDelayMs);
  if (url.startsWith('builtin:tone')) {
    const hz =
      url.length > 'builtin:tone:'.length ? Number(url.slice('builtin:tone:'.length)) : DEFAULT_TONE_HZ;
    return new ToneBot(port, deps.loop, rate, hz);
  }
  const wav = wavPath(url);
  if (wav !== undefined) {
    if (!own) return new PendingWavBot(wav, "BOT_URL's WAV file", port, deps);
    // Inside BOT_WAV_DIR: tenantBotUrlProblem said so above.
    const inside = wavPathInside(wav, config.botWavDir)!;
    // The provider is told the path as the tenant wrote it, never where it lies on this server.
    return new PendingWavBot(inside, url, port, deps);
  }
  // Config validation admits nothing else.
  throw new Error(`unsupported bot URL ${displayUrl(url)}`);
}

/** A Realtime URL names its model (`?model=`); one given in the settings is added when the URL has none. */
function realtimeUrl(url: string, model: string | undefined): string {
  if (model === undefined) return url;
  try {
    const u = new URL(url);
    if (!u.searchParams.has('model')) u.searchParams.set('model', model);
    return u.toString();
  } catch {
    return url;
  }
}

/** A bot leg that has failed before it began: the port hears so once, just after the session is set up. */
class FailedBot implements BotLeg {
  #ended = false;

  constructor(port: CallerPort, deps: BotDeps, err: BridgeError) {
    setImmediate(() => {
      if (this.#ended) return;
      deps.ctx.metrics.botConnects.labels('failed').inc();
      port.failed(err);
    });
  }

  audio(): void {}
  dtmf(): void {}
  mark(): void {}
  end(): void {
    this.#ended = true;
  }
}

/** Why a WAV file did not load, as the provider may be told it: a system error code or "not a WAV file". */
function wavFailure(err: unknown): string {
  if (err instanceof NotWavError) return 'not a WAV file the bridge can play';
  const code = (err as NodeJS.ErrnoException).code;
  return typeof code === 'string' && /^E[A-Z0-9]+$/.test(code) ? code : 'unreadable';
}

/** A WAV bot while its file loads (once per path and rate; cached after). */
class PendingWavBot implements BotLeg {
  #bot: BotLeg | undefined;
  #ended = false;

  /** `path` is the file read; `shown` names it in what the provider is told (no server path). */
  constructor(path: string, shown: string, port: CallerPort, deps: BotDeps) {
    const rate = deps.ctx.config.botSampleRate;
    loadWav(path, rate).then(
      (samples) => {
        if (!this.#ended) this.#bot = new WavBot(port, deps.loop, rate, samples);
      },
      (err: unknown) => {
        if (this.#ended) return;
        deps.ctx.metrics.botConnects.labels('failed').inc();
        const why = wavFailure(err);
        // The whole story for the operator; the provider gets the name and the code only.
        deps.log.warn({ path, code: why, err: (err as Error).message }, 'WAV bot file cannot be played');
        port.failed(new BridgeError('bot_unavailable', `cannot play ${shown} (${why})`));
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
