/**
 * Picks the bot leg for a call: the tenant's own bot when it has one, else the environment's, each as
 * `BotSettings` (src/config/bot-settings.ts), and the module of its dialect (src/media/dialects.ts),
 * which gives the leg's format and the leg. A dialect of ws URLs gets the socket's options from the
 * configuration; a `bot_unavailable` names the bot by its display form only.
 *
 * A tenant's bot is checked against the configuration again at each dial (it may have changed since it
 * was stored): its `url`, and every field its dialect declares as a URL it dials. One refused then, or
 * one that cannot be read, fails the bot leg only: the call goes on without a bot, as with one that
 * cannot be reached, and never falls back to the environment's bot.
 */
import type { BotSettings } from '../../config/bot-settings.js';
import { type BotUrlProblem, tenantBotUrlProblem, tenantDialledProblem } from '../../config/bot-url.js';
import { BridgeError } from '../../errors.js';
import { displayUrl } from '../../log.js';
import type { Format } from '../../pipeline/types.js';
import { BOT_DIALECT_MODULES } from '../dialects.js';
import type { SessionFormat } from '../format.js';
import type { BotDeps } from './dialect.js';
import type { BotCall, BotFormats, BotLeg, BotTools, CallerPort } from './types.js';
import type { WsLinkOptions } from './ws-link.js';

export type { BotDeps } from './dialect.js';

/** A call's bot: the settings to dial, and whether the tenant chose them; or a tenant bot that cannot be read. */
export type BotChoice =
  | { readonly settings: BotSettings; readonly own: boolean }
  | { readonly unreadable: true };

/** The audio the call's bot leg speaks, each way, for a caller in `caller`'s format. */
export function botFormat(
  choice: BotChoice,
  caller: SessionFormat,
  config: { readonly botSampleRate: number },
): BotFormats {
  // No bot will speak: any format does; PCM16 at the bot rate, as for a ws bot.
  if ('unreadable' in choice) return bothWays({ codec: 'slin', rate: config.botSampleRate });
  const f = BOT_DIALECT_MODULES[choice.settings.dialect].format(
    choice.settings,
    caller,
    config.botSampleRate,
  );
  return 'toBot' in f ? f : bothWays(f);
}

function bothWays(f: Format): BotFormats {
  return { toBot: f, fromBot: f };
}

/** Whether the call's bot names its formats only once connected (BotDialect.formatsFromBot). */
export function botFormatsFromBot(choice: BotChoice): boolean {
  if ('unreadable' in choice) return false;
  return BOT_DIALECT_MODULES[choice.settings.dialect].formatsFromBot === true;
}

/** Whether the call's bot sends a live stream (BotDialect.live): false for one that cannot be read. */
export function botLive(choice: BotChoice): boolean {
  if ('unreadable' in choice) return false;
  return BOT_DIALECT_MODULES[choice.settings.dialect].live?.(choice.settings) === true;
}

export function createBotLeg(
  call: BotCall,
  port: CallerPort,
  formats: BotFormats,
  deps: BotDeps & {
    readonly choice: BotChoice;
    /** The call's tools, for the dialects that carry them (src/media/call-tools.ts). */
    readonly tools?: BotTools | undefined;
  },
): BotLeg {
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
  const dialect = BOT_DIALECT_MODULES[settings.dialect];
  if (own) {
    // Checked again here: BOT_URL_ALLOWED_HOSTS, BOT_WAV_DIR or BOT_SAMPLE_RATE may have changed since
    // the tenant stored its bot.
    // A dialect that takes no URL has none to check: the URLs it calls are its fields (and what they answer).
    const urlProblem = dialect.decl.url.kind === 'none' ? undefined : tenantBotUrlProblem(url, config);
    const problem =
      urlProblem === undefined ? dialledProblem(settings, config) : { field: 'bot_url', ...urlProblem };
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
          `the tenant's ${problem.field} is refused by this bridge's configuration (${problem.field} must be ${problem.accepts}); PUT /v1/media-stream with another bot`,
        ),
      );
    }
  }
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
    // A URL the dialect learns before it dials (Ultravox's joinUrl) is held to the tenant's rule too.
    ...(own && { dialled: (u: string) => tenantBotUrlProblem(u, config) }),
  };
  const setup = { settings, own, format: formats.fromBot, formats, link, deps, tools: deps.tools };
  if (dialect.decl.url.kind === 'builtin') return dialect.create(call, port, setup);
  try {
    return dialect.create(call, port, setup);
  } catch (err) {
    // ws quotes the URL in its message, credentials and all: the bot is named by its display form only.
    throw new BridgeError(
      'bot_unavailable',
      `bot ${displayUrl(url)} cannot be dialled (${(err as Error).name}: not a URL the WebSocket client accepts); check ${own ? "the tenant's bot" : 'BOT_URL'}`,
    );
  }
}

/** Why a URL the tenant's dialect dials besides its `url` (a field declared `dials`) is refused now, if one is. */
function dialledProblem(
  settings: BotSettings,
  config: Parameters<typeof tenantDialledProblem>[1],
): (BotUrlProblem & { readonly field: string }) | undefined {
  const values = settings as Readonly<Record<string, unknown>>;
  for (const f of BOT_DIALECT_MODULES[settings.dialect].decl.fields) {
    const value = values[f.key];
    if (f.dials !== true || typeof value !== 'string') continue;
    const problem = tenantDialledProblem(value, config);
    if (problem !== undefined) return { field: `bot.${f.rest}`, ...problem };
  }
  return undefined;
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
