/**
 * The `builtin` dialect (src/dialects/bot/builtin.ts): the built-in bot a builtin: URL names, PCM16 at
 * BOT_SAMPLE_RATE. `builtin:echo` and `builtin:tone[:hz]` (builtin.ts) start at once; `builtin:wav:<path>`
 * (wav.ts) once its file is loaded, and fails the bot leg, naming the file as it was written and never
 * where it lies, when it cannot be played.
 */
import { wavPath, wavPathInside } from '../../config/bot-url.js';
import { builtin } from '../../dialects/bot/builtin.js';
import { BridgeError } from '../../errors.js';
import { displayUrl } from '../../log.js';
import { EchoBot, ToneBot } from './builtin.js';
import type { BotDeps, BotDialect } from './dialect.js';
import type { BotLeg, CallerPort } from './types.js';
import { loadWav, NotWavError, WavBot } from './wav.js';

export const DEFAULT_TONE_HZ = 440;

export const builtinBot: BotDialect = {
  decl: builtin,
  format: (_settings, _caller, botRate) => ({ codec: 'slin', rate: botRate }),
  create: (_call, port, { settings, own, deps }) => {
    const { config } = deps.ctx;
    const { url } = settings;
    const rate = config.botSampleRate;
    if (url === 'builtin:echo') return new EchoBot(port, deps.loop, config.echoDelayMs);
    if (url.startsWith('builtin:tone')) {
      const hz =
        url.length > 'builtin:tone:'.length ? Number(url.slice('builtin:tone:'.length)) : DEFAULT_TONE_HZ;
      return new ToneBot(port, deps.loop, rate, hz);
    }
    const wav = wavPath(url);
    if (wav !== undefined) {
      if (!own) return new PendingWavBot(wav, "BOT_URL's WAV file", port, deps);
      // Inside BOT_WAV_DIR: tenantBotUrlProblem said so before the leg was made.
      const inside = wavPathInside(wav, config.botWavDir)!;
      // The provider is told the path as the tenant wrote it, never where it lies on this server.
      return new PendingWavBot(inside, url, port, deps);
    }
    // Config validation admits nothing else.
    throw new Error(`unsupported bot URL ${displayUrl(url)}`);
  },
  // The echo is the caller's own audio, made at real time; a tone or a WAV file is made ahead of it.
  live: (settings) => settings.url === 'builtin:echo',
};

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
