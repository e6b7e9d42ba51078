/**
 * The registry's own rules, on a registry of dialects declared here: a dialect is one declaration (a
 * vendor URL of its own, a field shared with others, a field that is a URL the bridge calls), checked
 * by the same code as the registered ones; a name, a field or a URL kind's default declared twice or
 * not at all is refused at load.
 */
import { describe, expect, it } from 'vitest';
import { checkBotFields } from '../../src/config/bot-fields.js';
import { botUrlProblem, parseAllowedHosts, tenantDialledProblem } from '../../src/config/bot-url.js';
import { bridge } from '../../src/dialects/bot/bridge.js';
import { builtin } from '../../src/dialects/bot/builtin.js';
import { apiKey, SPEECH_FIELDS } from '../../src/dialects/bot/speech.js';
import { stringField } from '../../src/dialects/fields.js';
import { type BotDialectDecl, botRegistry } from '../../src/dialects/index.js';

/** A URL field a vendor dialect calls besides its socket: an API base. */
const apiBase = {
  ...stringField({
    key: 'apiBase',
    rest: 'api_base',
    min: 1,
    max: 256,
    example: 'https://api.vendor.example',
  }),
  dials: true as const,
};

const vendor: BotDialectDecl = {
  name: 'vendor-agent',
  url: { kind: 'ws', default: 'wss://api.vendor.example/agent' },
  fields: [...SPEECH_FIELDS, apiBase],
  summary: "as a client of the vendor's agent",
};

const registry = botRegistry([bridge, vendor, builtin]);
const names = {
  dialect: 'bot.dialect',
  url: 'bot.url',
  ...Object.fromEntries(registry.fields.map((f) => [f.key, `bot.${f.rest}`])),
};
const policy = {
  botWavDir: undefined,
  botUrlAllowedHosts: parseAllowedHosts('api.vendor.example', true) as never,
  production: true,
  botSampleRate: 16000,
};
const dialled = (url: string) => tenantDialledProblem(url, policy);

describe('a dialect declared as data', () => {
  it('gets its vendor URL when none is given, and the shared fields', () => {
    const checked = checkBotFields(
      { dialect: 'vendor-agent', apiKey: 'k-0123456789abcdef' },
      names,
      botUrlProblem,
      {
        registry,
      },
    );
    expect(checked.problems).toEqual([]);
    expect(checked.bot).toEqual({
      dialect: 'vendor-agent',
      url: 'wss://api.vendor.example/agent',
      apiKey: 'k-0123456789abcdef',
    });
    expect(registry.owners.get(apiKey.key)).toEqual(['vendor-agent']);
  });

  it('holds a field it dials to the tenant host rule, naming the field', () => {
    const ok = checkBotFields(
      { dialect: 'vendor-agent', apiBase: 'https://api.vendor.example' },
      names,
      botUrlProblem,
      { registry, dialled },
    );
    expect(ok.problems).toEqual([]);
    const refused = checkBotFields(
      { dialect: 'vendor-agent', apiBase: 'https://elsewhere.example/v1?key=secret-in-query' },
      names,
      botUrlProblem,
      { registry, dialled },
    );
    expect(refused.problems).toEqual([
      {
        field: 'bot.api_base',
        message:
          'bot.api_base must be an https:// URL whose host the operator has listed in BOT_URL_ALLOWED_HOSTS, got https://elsewhere.example/v1',
      },
    ]);
    // Plain http to a host listed by name is allowed in production; one allowed by `*` alone is not.
    const star = { ...policy, botUrlAllowedHosts: parseAllowedHosts('*', true) as never };
    expect(tenantDialledProblem('http://api.vendor.example', policy)).toBeUndefined();
    expect(tenantDialledProblem('http://api.vendor.example', star)?.accepts).toMatch(
      /plain http:\/\/ is refused/,
    );
    expect(tenantDialledProblem('ftp://api.vendor.example', policy)?.accepts).toMatch(/^an https:\/\/ URL/);
    // The environment's bot has no host rule, as BOT_URL has none.
    expect(
      checkBotFields(
        { dialect: 'vendor-agent', apiBase: 'https://elsewhere.example' },
        names,
        botUrlProblem,
        {
          registry,
        },
      ).problems,
    ).toEqual([]);
  });

  it('refuses a field of another dialect, listing what each takes', () => {
    const checked = checkBotFields(
      { url: 'wss://x.example', apiBase: 'https://a.example' },
      names,
      botUrlProblem,
      {
        registry,
      },
    );
    expect(checked.problems.map((p) => p.message)).toEqual([
      'bot.api_base does not apply to dialect bridge (only to vendor-agent); dialect bridge takes bot.dialect, bot.url, bot.tools, bot.hold_audio, bot.tool_hold_ms, bot.idle',
    ]);
  });

  it('is refused at load when declared twice or when a URL kind has no default', () => {
    expect(() => botRegistry([bridge, vendor, vendor, builtin])).toThrow(
      /declared twice: bot dialect vendor-agent/,
    );
    expect(() => botRegistry([vendor, builtin])).toThrow(/0 bot dialects are the default for ws URLs/);
    const clash = { ...vendor, name: 'other', fields: [{ ...apiKey }] };
    expect(() => botRegistry([bridge, vendor, clash, builtin])).toThrow(
      /bot field apiKey, bot field bot.api_key, variable BOT_API_KEY/,
    );
  });
});
