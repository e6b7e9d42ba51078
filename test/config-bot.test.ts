/**
 * The environment's default bot: BOT_URL, BOT_DIALECT and their twins, parsed into `config.bot` and
 * refused with one line per variable naming it; BOT_API_KEY never printed. And resolveBot, which picks
 * the call's bot from a tenant's stored config and the environment's.
 */
import { describe, expect, it } from 'vitest';
import { startupBanner } from '../src/cli/banner.js';
import { BOT_DIALECTS, type BotSettings, resolveBot } from '../src/config/bot-settings.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { BOTS } from '../src/dialects/index.js';
import { createLogger } from '../src/log.js';
import type { BotChoice } from '../src/media/bot/index.js';
import type { MediaStreamConfig } from '../src/state/types.js';

/** The dialects that take a field, as messages list them. */
const ownersOf = (key: string) => BOTS.owners.get(key)!.join(', ');

const KEY = 'sk-env-Pq7Wm2Xc9Lr4Tz8Nb1Kd';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
}

describe('the default bot from the environment', () => {
  it('BOT_URL alone: dialect builtin for builtin: URLs, bridge for ws/wss, nothing else set', () => {
    expect(loadConfig({}).bot).toStrictEqual({ dialect: 'builtin', url: 'builtin:echo' });
    expect(loadConfig({ BOT_URL: 'builtin:tone:300' }).bot).toStrictEqual({
      dialect: 'builtin',
      url: 'builtin:tone:300',
    });
    const ws = loadConfig({ BOT_URL: 'wss://bot.example/v1' });
    expect(ws.bot).toStrictEqual({ dialect: 'bridge', url: 'wss://bot.example/v1' });
    expect(ws.botUrl).toBe(ws.bot.url);
    expect(Object.isFrozen(ws.bot)).toBe(true);
  });

  it('openai-realtime with every twin; twilio and an empty twin (the same as unset)', () => {
    const c = loadConfig({
      BOT_URL: 'wss://realtime.example/v1/realtime',
      BOT_DIALECT: 'openai-realtime',
      BOT_API_KEY: KEY,
      BOT_MODEL: 'gpt-realtime',
      BOT_INSTRUCTIONS: 'Be brief.',
      BOT_VOICE: 'marin',
      BOT_TURN_DETECTION: 'semantic_vad',
    });
    expect(c.bot).toStrictEqual({
      dialect: 'openai-realtime',
      url: 'wss://realtime.example/v1/realtime',
      apiKey: KEY,
      model: 'gpt-realtime',
      instructions: 'Be brief.',
      voice: 'marin',
      turnDetection: 'semantic_vad',
    });
    expect(
      loadConfig({ BOT_URL: 'ws://127.0.0.1:8765', BOT_DIALECT: 'twilio', BOT_MODEL: '' }).bot,
    ).toStrictEqual({
      dialect: 'twilio',
      url: 'ws://127.0.0.1:8765',
    });
    // The --flag twins too.
    expect(loadConfig({ BOT_URL: 'ws://h:1' }, ['--bot-dialect', 'twilio']).bot.dialect).toBe('twilio');
  });

  it('each bad twin is one line naming the variable and what it accepts, all in one error', () => {
    expect(problems({ BOT_DIALECT: 'pipecat' })).toEqual([
      `BOT_DIALECT must be one of ${BOT_DIALECTS.join(', ')} (default: builtin for builtin: URLs, else bridge), got "pipecat"`,
    ]);
    expect(problems({ BOT_DIALECT: 'twilio' })).toEqual([
      'BOT_URL must be a ws:// or wss:// URL for dialect twilio, got "builtin:echo"',
    ]);
    expect(problems({ BOT_URL: 'wss://bot.example/v1', BOT_DIALECT: 'builtin' })).toEqual([
      'BOT_URL must be builtin:echo, builtin:tone[:hz] or builtin:wav:<path> for dialect builtin, got wss://bot.example/v1',
    ]);
    const rt = { BOT_URL: 'wss://rt.example/v1', BOT_DIALECT: 'openai-realtime' };
    expect(problems({ ...rt, BOT_TURN_DETECTION: 'auto' })).toEqual([
      'BOT_TURN_DETECTION must be one of server_vad, semantic_vad, none (default server_vad), got "auto"',
    ]);
    expect(problems({ ...rt, BOT_VOICE: 'v'.repeat(65) })).toEqual([
      'BOT_VOICE must be a string of 1 to 64 characters, got 65 characters',
    ]);
    expect(problems({ ...rt, BOT_MODEL: 'm'.repeat(129) })).toEqual([
      'BOT_MODEL must be a string of 1 to 128 characters, got 129 characters',
    ]);
    expect(problems({ ...rt, BOT_INSTRUCTIONS: 'i'.repeat(16_385) })).toEqual([
      'BOT_INSTRUCTIONS must be a string of at most 16384 characters, got 16385 characters',
    ]);

    // Settings of another dialect, and several problems at once: one line each, the key never shown.
    const lines = problems({
      BOT_URL: 'wss://bot.example/v1',
      BOT_API_KEY: KEY,
      BOT_VOICE: 'marin',
      PORT: 'x',
    });
    expect(lines).toEqual([
      `BOT_API_KEY does not apply to dialect bridge (only to ${ownersOf('apiKey')}); dialect bridge takes BOT_DIALECT, BOT_URL, BOT_TOOLS, BOT_HOLD_AUDIO, BOT_TOOL_HOLD_MS, BOT_IDLE`,
      `BOT_VOICE does not apply to dialect bridge (only to ${ownersOf('voice')}); dialect bridge takes BOT_DIALECT, BOT_URL, BOT_TOOLS, BOT_HOLD_AUDIO, BOT_TOOL_HOLD_MS, BOT_IDLE`,
      'PORT must be an integer from 0 to 65535, got "x"',
    ]);
    expect(problems({ BOT_URL: 'ws://h:1', BOT_DIALECT: 'twilio', BOT_MODEL: 'x' })).toEqual([
      `BOT_MODEL does not apply to dialect twilio (only to ${ownersOf('model')}); dialect twilio takes BOT_DIALECT, BOT_URL`,
    ]);
    for (const bad of [`${KEY} ${KEY}`, `${KEY}${'k'.repeat(512)}`]) {
      const [line, ...rest] = problems({ ...rt, BOT_API_KEY: bad });
      expect(rest).toEqual([]);
      expect(line).toMatch(
        /^BOT_API_KEY must be a string of 1 to 512 characters without spaces \(write-only\), got \d+ characters/,
      );
      expect(line).not.toContain(KEY.slice(-8));
    }
  });

  it('BOT_API_KEY is in no start-up banner, error message or log line', () => {
    const config = loadConfig({
      BOT_URL: 'wss://rt-user:rt-pw@rt.example/v1?k=q-55',
      BOT_DIALECT: 'openai-realtime',
      BOT_API_KEY: KEY,
    });
    const banner = startupBanner('http://127.0.0.1:9000', config);
    expect(banner).toContain('bot: wss://rt.example/v1 at 16000 Hz, dialect openai-realtime;');
    expect(banner).not.toMatch(/sk-env|Pq7Wm|rt-pw|q-55/);
    const err = problems({ BOT_URL: 'builtin:echo', BOT_API_KEY: KEY, BOT_DIALECT: 'nope' }).join('\n');
    expect(err).toMatch(/^BOT_DIALECT must be/);
    expect(err).not.toContain(KEY);
    // The logger redacts the key under the names it goes by, wherever a line might carry it.
    const lines: string[] = [];
    const log = createLogger('info', { write: (l: string) => void lines.push(l) });
    log.info({ bot: { api_key: KEY }, config: { bot: config.bot }, apiKey: KEY, api_key: KEY }, 'x');
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(KEY);
    expect(lines[0]).toContain('[redacted]');
  });
});

describe('resolveBot', () => {
  const env: BotSettings = { dialect: 'openai-realtime', url: 'wss://rt.example/v1', apiKey: KEY };
  const base: MediaStreamConfig = { tenant: 't', media_ws_url: 'wss://bridge.example/v1/media', channels: 1 };

  it("the tenant's bot (either form, own) before the environment's; unreadable is no bot at all", () => {
    // What the media path takes at session_start, as it is.
    const choice: BotChoice = resolveBot(undefined, { bot: env });
    expect(choice).toEqual({ settings: env, own: false });
    expect(resolveBot(base, { bot: env })).toEqual({ settings: env, own: false });
    const own: BotSettings = { dialect: 'twilio', url: 'wss://pipecat.example/ws', parameters: { a: 'b' } };
    expect(resolveBot({ ...base, bot: own }, { bot: env })).toEqual({ settings: own, own: true });
    expect(resolveBot({ ...base, bot_url: 'wss://bot.example/b' }, { bot: env })).toEqual({
      settings: { dialect: 'bridge', url: 'wss://bot.example/b' },
      own: true,
    });
    expect(resolveBot({ ...base, bot_url: 'builtin:tone:500' }, { bot: env })).toEqual({
      settings: { dialect: 'builtin', url: 'builtin:tone:500' },
      own: true,
    });
    expect(resolveBot({ ...base, bot_unreadable: true }, { bot: env })).toEqual({ unreadable: true });
    expect(resolveBot({ ...base, bot_url_unreadable: true }, { bot: env })).toEqual({ unreadable: true });
  });
});
