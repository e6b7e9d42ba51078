/**
 * `bot` in PUT /v1/media-stream over real HTTP: every rule's 400 names the field inside the object and
 * what it accepts; the api key is write-only (a hint of at most 4 characters on reads, never in a
 * response or a log line); bot and bot_url are one or the other.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { resolveBot } from '../../src/config/bot-settings.js';
import { BOTS } from '../../src/dialects/index.js';
import { call, type Rig, restToken, startRig, tinyServer } from './harness.js';

/** The dialects that take a field, as messages list them. */
const ownersOf = (key: string) => BOTS.owners.get(key)!.join(', ');
const DIALECTS = BOTS.dialects.map((d) => d.name).join(', ');

const API_KEY = 'sk-test-Zq81mN0pKx77rTy2vB4c9LQe';
const media_ws_url = 'wss://bridge.example/v1/media';

describe('bot in PUT /v1/media-stream', () => {
  let rig: Rig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('a twilio bot with parameters: stored as written, never forwarded, read back with its URL masked', async () => {
    const forwarded: Record<string, unknown>[] = [];
    const provider = await tinyServer((_req, res, _n, body) => {
      const upsert = JSON.parse(body) as Record<string, unknown>;
      forwarded.push(upsert);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(upsert));
    });
    try {
      rig = await startRig({ providerUrl: `${provider.url}/v1` });
      const token = await restToken(['media:manage'], 'acme');
      const bot = {
        dialect: 'twilio',
        url: 'wss://pipecat.example/ws?auth=tok-5521',
        parameters: { campaign: 'spring', lang: 'en-IN' },
      };
      const put = await call(rig.http, 'PUT', '/v1/media-stream', { token, body: { media_ws_url, bot } });
      expect(put.status).toBe(200);
      const shown = {
        dialect: 'twilio',
        url: 'wss://pipecat.example/ws?auth=****',
        parameters: { campaign: 'spring', lang: 'en-IN' },
      };
      expect(put.body).toMatchObject({ bot_url: null, bot: shown });
      const get = await call(rig.http, 'GET', '/v1/media-stream', { token });
      expect(get.body.bot).toEqual(shown);
      expect(get.body).not.toHaveProperty('bot_unreadable');
      expect((await rig.bridge.ctx.tenants.getMediaStream('acme'))?.bot).toEqual(bot);
      expect(forwarded).toEqual([{ media_ws_url }]);
      for (const text of [put.text, get.text, ...rig.logs]) expect(text).not.toContain('tok-5521');
      const line = rig.logs.find((l) => l.includes('media stream registered'));
      expect(JSON.parse(line!)).toMatchObject({
        bot: { dialect: 'twilio', url: 'wss://pipecat.example/ws?auth=****' },
        bot_url: null,
      });

      // The tenant's own bot, for the media path; then a PUT without it gives the environment's back.
      const stored = await rig.bridge.ctx.tenants.getMediaStream('acme');
      expect(resolveBot(stored, rig.bridge.ctx.config)).toEqual({ settings: bot, own: true });
      const without = await call(rig.http, 'PUT', '/v1/media-stream', {
        token,
        body: { media_ws_url, bot: null },
      });
      expect(without.body.bot).toBeNull();
      const after = await rig.bridge.ctx.tenants.getMediaStream('acme');
      expect(after).not.toHaveProperty('bot');
      expect(resolveBot(after, rig.bridge.ctx.config)).toEqual({
        settings: { dialect: 'builtin', url: 'builtin:echo' },
        own: false,
      });
    } finally {
      await provider.close();
    }
  });

  it('an openai-realtime api_key is write-only: reads show api_key_hint (at most its last 4), no response or log line has it', async () => {
    rig = await startRig({ providerUrl: null, logLevel: 'trace' });
    const token = await restToken(['media:manage']);
    const bot = {
      dialect: 'openai-realtime',
      url: 'wss://realtime.example/v1/realtime?model=gpt-realtime',
      api_key: API_KEY,
      model: 'gpt-realtime',
      instructions: 'Greet the caller, then ask how you can help.',
      voice: 'marin',
      turn_detection: 'semantic_vad',
    };
    const put = await call(rig.http, 'PUT', '/v1/media-stream', { token, body: { media_ws_url, bot } });
    expect(put.status).toBe(200);
    const shown = {
      dialect: 'openai-realtime',
      url: 'wss://realtime.example/v1/realtime?model=****',
      api_key_hint: '****9LQe',
      model: 'gpt-realtime',
      instructions: 'Greet the caller, then ask how you can help.',
      voice: 'marin',
      turn_detection: 'semantic_vad',
    };
    expect(put.body.bot).toEqual(shown);
    const get = await call(rig.http, 'GET', '/v1/media-stream', { token });
    expect(get.body.bot).toEqual(shown);
    const hint = (get.body.bot as { api_key_hint: string }).api_key_hint;
    expect(hint.replace(/^\*+/, '').length).toBeLessThanOrEqual(4);
    // A short key shows no character of itself.
    const short = await call(rig.http, 'PUT', '/v1/media-stream', {
      token,
      body: { media_ws_url, bot: { ...bot, api_key: 'sk-short-k3y' } },
    });
    expect(short.body.bot).toMatchObject({ api_key_hint: '****' });

    // Kept in memory as written, for the media path.
    expect((await rig.bridge.ctx.tenants.getMediaStream('default'))?.bot?.apiKey).toBe('sk-short-k3y');
    // Neither key in any answer or any log line, the trace-level request logs included.
    const docs = await call(rig.http, 'GET', '/docs/json');
    for (const text of [put.text, get.text, short.text, docs.text, ...rig.logs]) {
      expect(text).not.toContain(API_KEY);
      expect(text).not.toContain('sk-short-k3y');
    }
    expect(rig.logs.some((l) => l.includes('media stream registered'))).toBe(true);
  });

  it('bot and bot_url in one body: 400 naming bot; either one alone replaces the other', async () => {
    rig = await startRig({ providerUrl: null });
    const token = await restToken(['media:manage']);
    const both = await call(rig.http, 'PUT', '/v1/media-stream', {
      token,
      body: { media_ws_url, bot_url: 'builtin:echo', bot: { url: 'builtin:tone:500' } },
    });
    expect(both.status).toBe(400);
    expect(both.body).toEqual({
      error: 'invalid_field',
      message:
        'bot and bot_url must not both be given: bot_url is the short form of bot (a bridge or builtin bot by URL)',
    });
    expect(await rig.bridge.ctx.tenants.getMediaStream('default')).toBeUndefined();

    // bot_url alone: stored as bot_url (the short form), read as bot too.
    const short = await call(rig.http, 'PUT', '/v1/media-stream', {
      token,
      body: { media_ws_url, bot_url: 'wss://u:pw-77@bot.example/b' },
    });
    expect(short.body).toMatchObject({
      bot_url: 'wss://****@bot.example/b',
      bot: { dialect: 'bridge', url: 'wss://****@bot.example/b' },
    });
    expect(short.text).not.toContain('pw-77');
    // Then bot alone: the bot_url goes.
    const long = await call(rig.http, 'PUT', '/v1/media-stream', {
      token,
      body: { media_ws_url, bot: { url: 'builtin:tone:500' } },
    });
    expect(long.body).toMatchObject({ bot_url: null, bot: { dialect: 'builtin', url: 'builtin:tone:500' } });
    const stored = await rig.bridge.ctx.tenants.getMediaStream('default');
    expect(stored).not.toHaveProperty('bot_url');
    expect(stored?.bot).toEqual({ dialect: 'builtin', url: 'builtin:tone:500' });
    // bot_url with bot null is the short form alone.
    const nulled = await call(rig.http, 'PUT', '/v1/media-stream', {
      token,
      body: { media_ws_url, bot_url: 'builtin:echo', bot: null },
    });
    expect(nulled.status).toBe(200);
    expect(await rig.bridge.ctx.tenants.getMediaStream('default')).not.toHaveProperty('bot');
  });

  it('400 names the field inside bot and what it accepts, and never quotes the api key', async () => {
    rig = await startRig({ providerUrl: null, env: { BOT_URL_ALLOWED_HOSTS: 'bot.example' } });
    const token = await restToken(['media:manage']);
    const ws = 'wss://bot.example/ws';
    const rt = { dialect: 'openai-realtime', url: ws };
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`p${i}`, 'v']));
    const cases: [unknown, string][] = [
      [
        'wss://bot.example/ws',
        `bot must be an object with url (unless its dialect has a default or takes none) and optionally dialect, ${BOTS.fields.map((f) => f.rest).join(', ')} (null: the bridge's bot), got a string`,
      ],
      [[ws], 'bot must be an object with url'],
      [
        {},
        'bot.url must be ws://…, wss://…, builtin:echo, builtin:tone[:hz] or builtin:wav:<path> (at most 2048 characters), got nothing',
      ],
      [
        { url: 7 },
        'bot.url must be ws://…, wss://…, builtin:echo, builtin:tone[:hz] or builtin:wav:<path> (at most 2048 characters), got a number',
      ],
      [{ url: `${ws}/${'a'.repeat(2048)}` }, 'bot.url must be at most 2048 characters, got 2069'],
      [
        { url: 'https://bot.example/ws' },
        'bot.url must be ws://…, wss://…, builtin:echo, builtin:tone[:hz] or builtin:wav:<path>, got https://bot.example/ws',
      ],
      [
        { url: 'wss://169.254.169.254/latest' },
        'bot.url must be a ws:// or wss:// URL whose host the operator has listed in BOT_URL_ALLOWED_HOSTS, got wss://169.254.169.254/latest',
      ],
      [
        { url: 'builtin:wav:/etc/passwd' },
        'bot.url must be ws://…, wss://…, builtin:echo or builtin:tone[:hz] (builtin:wav:<path> is refused: the bridge has no BOT_WAV_DIR)',
      ],
      [{ url: 'builtin:tone:9000' }, 'bot.url must be builtin:tone:<hz> with hz from 1 to 8000'],
      [
        { url: ws, dialect: 'pipecat' },
        `bot.dialect must be one of ${DIALECTS} (default: builtin for builtin: URLs, else bridge), got "pipecat"`,
      ],
      [{ url: ws, dialect: 3 }, `bot.dialect must be one of ${DIALECTS}`],
      [
        { url: 'builtin:echo', dialect: 'twilio' },
        'bot.url must be a ws:// or wss:// URL for dialect twilio, got "builtin:echo"',
      ],
      [
        { url: ws, dialect: 'builtin' },
        'bot.url must be builtin:echo, builtin:tone[:hz] or builtin:wav:<path> for dialect builtin, got wss://bot.example/ws',
      ],
      [
        { url: ws, dialect: 'twilio', api_key: API_KEY },
        `bot.api_key does not apply to dialect twilio (only to ${ownersOf('apiKey')}); dialect twilio takes bot.dialect, bot.url, bot.parameters`,
      ],
      [
        { ...rt, parameters: { a: 'b' } },
        'bot.parameters does not apply to dialect openai-realtime (only to twilio); dialect openai-realtime takes bot.dialect, bot.url, bot.api_key, bot.model, bot.instructions, bot.voice, bot.turn_detection, bot.dtmf, bot.tools, bot.hold_audio, bot.tool_hold_ms, bot.idle',
      ],
      [
        { url: ws, model: 'gpt-realtime' },
        `bot.model does not apply to dialect bridge (only to ${ownersOf('model')}); dialect bridge takes bot.dialect, bot.url, bot.tools, bot.hold_audio, bot.tool_hold_ms, bot.idle`,
      ],
      [{ url: 'builtin:echo', voice: 'marin' }, 'bot.voice does not apply to dialect builtin'],
      [
        { url: ws, dialect: 'twilio', turn_detection: 'none' },
        'bot.turn_detection does not apply to dialect twilio',
      ],
      [
        { url: ws, dialect: 'twilio', instructions: 'x' },
        'bot.instructions does not apply to dialect twilio',
      ],
      [
        { url: ws, dialect: 'twilio', parameters: ['a'] },
        'bot.parameters must be an object of at most 32 string values',
      ],
      [{ url: ws, dialect: 'twilio', parameters: many }, 'got 33 parameters'],
      [
        { url: ws, dialect: 'twilio', parameters: { 'bad name': 'v' } },
        'bot.parameters must be an object of at most 32 string values, names of 1 to 64 letters, digits or "_.-" (not session_id, tenant, customer_phone, direction), values of at most 512 characters, got a parameter named "bad name"',
      ],
      [
        { url: ws, dialect: 'twilio', parameters: { session_id: 'forged' } },
        'bot.parameters.session_id is set by the bridge itself; bot.parameters must not name session_id, tenant, customer_phone, direction',
      ],
      [
        { url: ws, dialect: 'twilio', parameters: { n: 5 } },
        'bot.parameters.n must be a string of at most 512 characters, got a number',
      ],
      [
        { url: ws, dialect: 'twilio', parameters: { n: 'x'.repeat(513) } },
        'bot.parameters.n must be a string of at most 512 characters, got 513 characters',
      ],
      [
        { ...rt, turn_detection: 'auto' },
        'bot.turn_detection must be one of server_vad, semantic_vad, none (default server_vad), got "auto"',
      ],
      [{ ...rt, model: '' }, 'bot.model must be a string of 1 to 128 characters, got 0 characters'],
      [{ ...rt, model: 4 }, 'bot.model must be a string of 1 to 128 characters, got a number'],
      [
        { ...rt, voice: 'v'.repeat(65) },
        'bot.voice must be a string of 1 to 64 characters, got 65 characters',
      ],
      [
        { ...rt, instructions: 'i'.repeat(16_385) },
        'bot.instructions must be a string of at most 16384 characters, got 16385 characters',
      ],
      [
        { ...rt, api_key: 12345678 },
        'bot.api_key must be a string of 1 to 512 characters without spaces (write-only), got a number',
      ],
      [
        { ...rt, api_key: `${API_KEY} x` },
        'bot.api_key must be a string of 1 to 512 characters without spaces (write-only), got 34 characters with spaces',
      ],
      [{ ...rt, api_key: `${API_KEY}${'k'.repeat(500)}` }, 'got 532 characters'],
      [
        { ...rt, apiKey: API_KEY },
        'unknown field "bot.apiKey"; accepted fields of bot: dialect, url, tools, hold_audio, tool_hold_ms, idle, parameters, api_key, model, instructions, voice, turn_detection, dtmf',
      ],
    ];
    for (const [bot, message] of cases) {
      const r = await call(rig.http, 'PUT', '/v1/media-stream', { token, body: { media_ws_url, bot } });
      expect({ status: r.status, error: r.body.error }, message).toEqual({
        status: 400,
        error: 'invalid_field',
      });
      expect(r.body.message, JSON.stringify(bot).slice(0, 80)).toContain(message);
      expect(r.text).not.toContain(API_KEY);
    }
    expect(await rig.bridge.ctx.tenants.getMediaStream('default')).toBeUndefined();

    // The same bots, each mended, are accepted: every refusal above is the rule it names.
    const good: unknown[] = [
      { url: ws },
      { url: 'builtin:tone:8000' },
      { url: ws, dialect: 'twilio', parameters: Object.fromEntries(Object.entries(many).slice(0, 32)) },
      { url: ws, dialect: 'twilio', parameters: { 'good.name-1_x': 'x'.repeat(512) } },
      {
        ...rt,
        api_key: `k${'k'.repeat(511)}`,
        model: 'm'.repeat(128),
        voice: 'v'.repeat(64),
        instructions: 'i'.repeat(16_384),
      },
      { ...rt, turn_detection: 'none', instructions: '' },
      // null is the same as left out, in bot as in the body.
      { url: ws, dialect: null, model: null, parameters: null },
    ];
    for (const bot of good) {
      const r = await call(rig.http, 'PUT', '/v1/media-stream', { token, body: { media_ws_url, bot } });
      expect(r.status, JSON.stringify(bot).slice(0, 80)).toBe(200);
    }
    expect((await rig.bridge.ctx.tenants.getMediaStream('default'))?.bot).toStrictEqual({
      dialect: 'bridge',
      url: ws,
    });
  });

  it('the OpenAPI document describes bot on the upsert (api_key write-only) and on reads (api_key_hint)', async () => {
    rig = await startRig({ providerUrl: null });
    const docs = await call(rig.http, 'GET', '/docs/json');
    type Props = Record<
      string,
      { properties?: Record<string, Record<string, unknown>> } & Record<string, unknown>
    >;
    type Json = { content: { 'application/json': { schema: { properties: Props } } } };
    const route = (
      docs.body.paths as Record<
        string,
        { put: { requestBody: Json }; get: { responses: Record<string, Json> } }
      >
    )['/v1/media-stream']!;
    const upsert = route.put.requestBody.content['application/json'].schema.properties.bot!;
    // `url` is not required of every bot: a dialect may default it or take none.
    expect(upsert).toMatchObject({ type: 'object', nullable: true });
    expect(upsert).not.toHaveProperty('required');
    expect(Object.keys(upsert.properties!)).toEqual(['dialect', 'url', ...BOTS.fields.map((f) => f.rest)]);
    expect(upsert.properties!.api_key).toMatchObject({ writeOnly: true });
    expect(upsert.properties!.dtmf).toMatchObject({ enum: ['text', 'respond', 'ignore'] });
    expect(upsert.properties!.dialect).toMatchObject({ enum: BOTS.dialects.map((d) => d.name) });
    expect(upsert.properties!.turn_detection).toMatchObject({ enum: ['server_vad', 'semantic_vad', 'none'] });
    const read = route.get.responses['200']!.content['application/json'].schema.properties;
    expect(Object.keys(read.bot!.properties!)).toContain('api_key_hint');
    expect(read.bot!.properties!).not.toHaveProperty('api_key');
    expect(read.bot_unreadable).toMatchObject({ type: 'boolean' });
  });
});
