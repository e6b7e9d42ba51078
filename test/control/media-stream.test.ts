import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import { startBridge, type TestBridge } from '../helpers/bridge.js';
import { TestProvider } from '../helpers/provider.js';
import { upgradeStatus } from '../helpers/upgrade.js';
import { waitFor } from '../helpers/wait.js';
import {
  call,
  closedPort,
  EMULATOR_SECRET,
  MEDIA_SECRET,
  type Rig,
  restToken,
  startRig,
  tinyServer,
} from './harness.js';

const NEW_SECRET = 'rotated-media-secret-4b1e7c9d2a';

/** The HTTP status of a media handshake: 101 when the endpoint accepted the token. */
function handshake(url: string, token: string): Promise<number> {
  return upgradeStatus(url, { authorization: `Bearer ${token}` });
}

describe('media-stream registration', () => {
  let rig: Rig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('PUT then GET: stored, forwarded to the provider, secret write-only with a hint of at most 2 characters', async () => {
    rig = await startRig();
    const token = await restToken(['media:manage']);
    const before = await call(rig.http, 'GET', '/v1/media-stream', { token });
    expect(before.status).toBe(404);

    const upsert = {
      media_ws_url: 'wss://bridge.example/v1/media',
      codec: 'PCM16',
      input_sample_rate: 8000,
      output_sample_rate: 16000,
      encoding: 'base64',
      chunk_bytes: 640,
      media_secret: NEW_SECRET,
    };
    const put = await call(rig.http, 'PUT', '/v1/media-stream', { token, body: upsert });
    expect(put.status).toBe(200);
    const expected = {
      tenant: 'default',
      media_ws_url: 'wss://bridge.example/v1/media',
      codec: 'slin',
      input_sample_rate: 8000,
      output_sample_rate: 16000,
      channels: 1,
      encoding: 'base64',
      chunk_bytes: 640,
      secret_hint: '****2a',
      recording: false,
      denoise: false,
      bot_url: null,
      bot: null,
      provider_auth: {},
    };
    expect(put.body).toEqual(expected);
    const get = await call(rig.http, 'GET', '/v1/media-stream', { token });
    expect(get.body).toEqual(expected);

    // The provider got the upsert, secret included (it signs its media tokens with it).
    const providerToken = await mintToken({ secret: EMULATOR_SECRET, scopes: ['media:manage'] });
    const atProvider = await call(rig.emulatorUrl!, 'GET', '/v1/media-stream', { token: providerToken });
    expect(atProvider.body).toMatchObject({
      media_ws_url: upsert.media_ws_url,
      codec: 'PCM16',
      chunk_bytes: 640,
    });
    expect(atProvider.body.secret_hint).toBe('****2a');

    // The secret appears in no response and no log line.
    for (const text of [put.text, get.text, atProvider.text, ...rig.logs])
      expect(text).not.toContain(NEW_SECRET);
    expect(rig.logs.some((l) => l.includes('media stream registered'))).toBe(true);

    // From now on the media endpoint verifies the tenant's tokens with the new secret.
    expect(await rig.bridge.ctx.tenants.getMediaSecret('default')).toBe(NEW_SECRET);
    const mediaUrl = `${rig.http.replace('http', 'ws')}/v1/media`;
    expect(await handshake(mediaUrl, await mintToken({ secret: NEW_SECRET }))).toBe(101);
    expect(await handshake(mediaUrl, await mintToken({ secret: MEDIA_SECRET }))).toBe(401);
  });

  it('optional fields take the defaults, and the secret is kept until replaced', async () => {
    rig = await startRig({ providerUrl: null });
    const token = await restToken(['media:manage'], 'acme');
    const put = await call(rig.http, 'PUT', '/v1/media-stream', {
      token,
      body: { media_ws_url: 'ws://127.0.0.1:1/v1/media', media_secret: 'short-one' },
    });
    expect(put.body).toEqual({
      tenant: 'acme',
      media_ws_url: 'ws://127.0.0.1:1/v1/media',
      codec: 'slin',
      input_sample_rate: 8000,
      output_sample_rate: 8000,
      channels: 1,
      encoding: 'binary',
      chunk_bytes: 320,
      secret_hint: '****',
      recording: false,
      denoise: false,
      bot_url: null,
      bot: null,
      provider_auth: {},
    });
    await call(rig.http, 'PUT', '/v1/media-stream', {
      token,
      body: { media_ws_url: 'ws://127.0.0.1:2/v1/media' },
    });
    // Stored as given: what was left out is resolved at each session_start, not guessed now.
    expect(await rig.bridge.ctx.tenants.getMediaStream('acme')).toStrictEqual({
      tenant: 'acme',
      media_ws_url: 'ws://127.0.0.1:2/v1/media',
      channels: 1,
    });
    expect(await rig.bridge.ctx.tenants.getMediaSecret('acme')).toBe('short-one');
    expect(await rig.bridge.ctx.tenants.getMediaStream('default')).toBeUndefined();
  });

  it('400 names each bad field and what it accepts', async () => {
    rig = await startRig({ providerUrl: null });
    const token = await restToken(['media:manage']);
    const ok = { media_ws_url: 'ws://h/v1/media' };
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'media_ws_url must be a ws:// or wss:// URL, got nothing'],
      [{ media_ws_url: 'http://h/x' }, 'media_ws_url must be a ws:// or wss:// URL, got "http://h/x"'],
      [{ ...ok, input_sample_rate: 11025 }, 'input_sample_rate must be 8000 or 16000, got 11025'],
      [{ ...ok, output_sample_rate: 44100 }, 'output_sample_rate must be 8000 or 16000, got 44100'],
      [{ ...ok, encoding: 'hex' }, 'encoding must be "binary" or "base64", got "hex"'],
      [
        { ...ok, codec: 'opus' },
        'codec must be slin (or PCM16, L16, LINEAR16, slin16), pcmu or pcma, got "opus"',
      ],
      [{ ...ok, chunk_bytes: 321 }, 'chunk_bytes must be an even integer from 80 to 6400, got 321'],
      [{ ...ok, chunk_bytes: 64000 }, 'chunk_bytes must be an even integer from 80 to 6400, got 64000'],
      [{ ...ok, chunk_bytes: 2 }, 'chunk_bytes must be an even integer from 80 to 6400, got 2'],
      [{ ...ok, channels: 2 }, 'channels must be 1 (mono), got 2'],
      [{ ...ok, media_secret: 'x' }, 'media_secret must be a string of 8 to 512 characters (write-only)'],
      [
        { ...ok, denoise: 'yes' },
        'denoise must be true or false: true cleans the caller\'s audio with the noise suppressor before the bot hears it (recordings keep it as carried); left out: only with DENOISE, got "yes"',
      ],
      [
        { ...ok, sample_rate: 8000 },
        'unknown field "sample_rate"; accepted fields: media_ws_url, codec, input_sample_rate, output_sample_rate, channels, encoding, chunk_bytes, media_secret, tool_secret, bot_url, bot, recording, denoise, provider_auth',
      ],
    ];
    for (const [body, message] of cases) {
      const r = await call(rig.http, 'PUT', '/v1/media-stream', { token, body });
      expect({ status: r.status, message: r.body.message }).toEqual({ status: 400, message });
    }
    const notObject = await call(rig.http, 'PUT', '/v1/media-stream', { token, body: [1] });
    expect(notObject.status).toBe(400);
    for (const alias of ['L16', 'linear16', 'slin16', 'pcmu', 'PCMA']) {
      const r = await call(rig.http, 'PUT', '/v1/media-stream', { token, body: { ...ok, codec: alias } });
      expect(r.status).toBe(200);
    }
    expect(await rig.bridge.ctx.tenants.getMediaStream('default')).toMatchObject({ codec: 'pcma' });
  });

  it('bot_url: stored with the tenant, never forwarded, read back masked; left out or null clears it', async () => {
    const forwarded: Record<string, unknown>[] = [];
    const provider = await tinyServer((_req, res, _n, body) => {
      const upsert = JSON.parse(body) as Record<string, unknown>;
      forwarded.push(upsert);
      const { media_secret: _secret, ...config } = upsert;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(config));
    });
    try {
      rig = await startRig({ providerUrl: `${provider.url}/v1` });
      const token = await restToken(['media:manage'], 'acme');
      const media_ws_url = 'wss://bridge.example/v1/media';
      const bot_url = 'wss://bot-user:pw-9911@bot.example:8443/v1/bot?token=tok-9912&lang=en&tok-9913';
      const masked = 'wss://****@bot.example:8443/v1/bot?token=****&lang=****&****';
      const put = await call(rig.http, 'PUT', '/v1/media-stream', { token, body: { media_ws_url, bot_url } });
      expect(put.status).toBe(200);
      expect(put.body.bot_url).toBe(masked);
      const get = await call(rig.http, 'GET', '/v1/media-stream', { token });
      expect(get.body).toMatchObject({ tenant: 'acme', media_ws_url, bot_url: masked });
      expect((await rig.bridge.ctx.tenants.getMediaStream('acme'))?.bot_url).toBe(bot_url);
      // The provider's MediaStreamUpsert has no such field: it got the rest only.
      expect(forwarded).toEqual([{ media_ws_url }]);
      const line = rig.logs.find((l) => l.includes('media stream registered'));
      expect(line).toContain(`"bot_url":"${masked}"`);
      for (const text of [put.text, get.text, ...rig.logs]) expect(text).not.toMatch(/pw-9911|tok-991[23]/);

      // The upsert replaces the config: without bot_url (or with null) the bridge's BOT_URL applies again.
      const without = await call(rig.http, 'PUT', '/v1/media-stream', { token, body: { media_ws_url } });
      expect(without.body.bot_url).toBeNull();
      expect(await rig.bridge.ctx.tenants.getMediaStream('acme')).not.toHaveProperty('bot_url');
      const tone = await call(rig.http, 'PUT', '/v1/media-stream', {
        token,
        body: { media_ws_url, bot_url: 'builtin:tone:600' },
      });
      expect(tone.body.bot_url).toBe('builtin:tone:600');
      const cleared = await call(rig.http, 'PUT', '/v1/media-stream', {
        token,
        body: { media_ws_url, bot_url: null },
      });
      expect(cleared.status).toBe(200);
      expect((await call(rig.http, 'GET', '/v1/media-stream', { token })).body.bot_url).toBeNull();
      expect(forwarded.slice(1)).toEqual([{ media_ws_url }, { media_ws_url }, { media_ws_url }]);

      // The OpenAPI document describes the field on both routes.
      const docs = await call(rig.http, 'GET', '/docs/json');
      type Json = { content: { 'application/json': { schema: { properties: Record<string, unknown> } } } };
      const paths = docs.body.paths as Record<
        string,
        { put: { requestBody: Json }; get: { responses: Record<string, Json> } }
      >;
      const route = paths['/v1/media-stream']!;
      expect(route.put.requestBody.content['application/json'].schema.properties.bot_url).toMatchObject({
        type: 'string',
        nullable: true,
        description: expect.stringContaining('inside BOT_WAV_DIR'),
      });
      expect(route.get.responses['200']!.content['application/json'].schema.properties.bot_url).toMatchObject(
        {
          nullable: true,
          description: expect.stringContaining('masked'),
        },
      );
    } finally {
      await provider.close();
    }
  });

  it('400 for a bot_url the tenant may not use: a bad scheme, builtin:wav without BOT_WAV_DIR or outside it', async () => {
    const ok = { media_ws_url: 'ws://h/v1/media' };
    const refused = async (bot_url: unknown): Promise<string> => {
      const r = await call(rig!.http, 'PUT', '/v1/media-stream', { token, body: { ...ok, bot_url } });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_field');
      expect(r.text).not.toMatch(/pw-7|tok-7/);
      return String(r.body.message);
    };
    const token = await restToken(['media:manage']);

    rig = await startRig({ providerUrl: null });
    expect(await refused('http://u:pw-7@bot.example/x?token=tok-7')).toBe(
      'bot_url must be ws://…, wss://…, builtin:echo, builtin:tone[:hz] or builtin:wav:<path>, got http://bot.example/x',
    );
    expect(await refused('ws://u:pw-7@bad host/x?token=tok-7')).toBe(
      'bot_url must be a valid ws:// or wss:// URL with a host and no #fragment, got (not a valid URL)',
    );
    expect(await refused('builtin:tone:loud')).toBe(
      'bot_url must be ws://…, wss://…, builtin:echo, builtin:tone[:hz] or builtin:wav:<path>, got "builtin:tone:loud"',
    );
    expect(await refused(`wss://u:pw-7@bot.example/${'x'.repeat(2048)}`)).toBe(
      'bot_url must be at most 2048 characters, got 2073',
    );
    expect(await refused(['ws://bot.example'])).toBe(
      "bot_url must be ws://… or wss://… to a host listed in BOT_URL_ALLOWED_HOSTS, builtin:echo, builtin:tone[:hz] (hz from 1 to half of BOT_SAMPLE_RATE), or builtin:wav:<path> inside BOT_WAV_DIR (null: the bridge's BOT_URL), got an array",
    );
    expect(await refused('builtin:wav:/etc/passwd')).toBe(
      'bot_url must be ws://…, wss://…, builtin:echo or builtin:tone[:hz] (builtin:wav:<path> is refused: the bridge has no BOT_WAV_DIR), got "builtin:wav:/etc/passwd"',
    );
    await rig.close();

    const dir = mkdtempSync(join(tmpdir(), 'vb-bot-wav-'));
    mkdirSync(join(dir, 'prompts'));
    rig = await startRig({ providerUrl: null, env: { BOT_WAV_DIR: dir } });
    const outside = 'bot_url must be builtin:wav:<path> with the path inside BOT_WAV_DIR, got';
    for (const path of ['../escape.wav', 'prompts/../../escape.wav', '/etc/passwd', `${dir}/../x.wav`, '.']) {
      expect(await refused(`builtin:wav:${path}`)).toBe(
        `${outside} ${JSON.stringify(`builtin:wav:${path}`)}`,
      );
    }
    for (const path of ['hello.wav', 'prompts/../hello.wav', `${dir}/prompts/hello.wav`]) {
      const r = await call(rig.http, 'PUT', '/v1/media-stream', {
        token,
        body: { ...ok, bot_url: `builtin:wav:${path}` },
      });
      expect({ path, status: r.status, bot_url: r.body.bot_url }).toEqual({
        path,
        status: 200,
        bot_url: `builtin:wav:${path}`,
      });
    }
    // A refused PUT changed nothing.
    expect(await refused('ftp://bot.example/')).toMatch(/^bot_url must be /);
    expect((await rig.bridge.ctx.tenants.getMediaStream('default'))?.bot_url).toBe(
      `builtin:wav:${dir}/prompts/hello.wav`,
    );
  });

  /** PUT /v1/media-stream with `bot_url` on `rig`: the status and the error message (if any). */
  async function putBot(bot_url: string): Promise<{ status: number; message: string; text: string }> {
    const token = await restToken(['media:manage']);
    const r = await call(rig!.http, 'PUT', '/v1/media-stream', {
      token,
      body: { media_ws_url: 'wss://bridge.example/v1/media', bot_url },
    });
    return { status: r.status, message: String(r.body.message ?? ''), text: r.text };
  }

  it('BOT_URL_ALLOWED_HOSTS: a ws/wss bot_url only to a listed host, so tenants cannot reach metadata, loopback or internal names', async () => {
    rig = await startRig({
      providerUrl: null,
      env: { BOT_URL_ALLOWED_HOSTS: 'bots.example.com, *.voice.example:8443' },
    });
    const notListed =
      'bot_url must be a ws:// or wss:// URL whose host the operator has listed in BOT_URL_ALLOWED_HOSTS, got';
    for (const [url, shown] of [
      ['ws://169.254.169.254/latest/meta-data/', 'ws://169.254.169.254/latest/meta-data/'],
      ['ws://127.0.0.1:6379/', 'ws://127.0.0.1:6379/'],
      ['ws://0x7f.1:22/', 'ws://127.0.0.1:22/'],
      ['wss://u:pw-7@internal-db/?token=tok-7', 'wss://internal-db/'],
      ['wss://voice.example:8443/', 'wss://voice.example:8443/'], // the wildcard is for subdomains only
      ['wss://a.voice.example/', 'wss://a.voice.example/'], // port 443, not the listed 8443
      ['wss://bots.example.com.evil.example/', 'wss://bots.example.com.evil.example/'],
      ['wss://bot-user:123?pw-7@bot.example/', '(not a valid URL)'],
    ]) {
      const r = await putBot(url!);
      expect({ url, status: r.status, message: r.message }).toEqual({
        url,
        status: 400,
        message: `${notListed} ${shown}`,
      });
      expect(r.text).not.toMatch(/pw-7|tok-7/);
    }
    for (const url of [
      'wss://bots.example.com/v1',
      'ws://BOTS.example.com:9000/v1',
      'wss://a.voice.example:8443/v1',
      'WSS://b.c.voice.example:8443/v1',
      'builtin:echo',
    ]) {
      expect({ url, status: (await putBot(url)).status }).toEqual({ url, status: 200 });
    }
  });

  it('BOT_URL_ALLOWED_HOSTS in production: unset refuses tenant ws/wss bots; * admits wss:// only, ws:// needs the host by name', async () => {
    const prod = { NODE_ENV: 'production' };
    rig = await startRig({ env: prod });
    const unset = await putBot('wss://bot.example/v1');
    expect(unset.status).toBe(400);
    expect(unset.message).toBe(
      'bot_url must be builtin:echo, builtin:tone[:hz] or builtin:wav:<path> on this bridge: ws:// and wss:// bots are refused until the operator lists their hosts in BOT_URL_ALLOWED_HOSTS, got wss://bot.example/v1',
    );
    expect((await putBot('builtin:echo')).status).toBe(200);
    expect((await putBot('builtin:tone:600')).status).toBe(200);
    await rig.close();

    rig = await startRig({ env: { ...prod, BOT_URL_ALLOWED_HOSTS: '*,plain.example,*.lan.example' } });
    expect((await putBot('wss://bot.example/v1')).status).toBe(200);
    const plain = await putBot('ws://bot.example/v1');
    expect(plain.status).toBe(400);
    expect(plain.message).toBe(
      'bot_url must be a wss:// URL: plain ws:// is refused in production unless the operator lists the host by name in BOT_URL_ALLOWED_HOSTS, got ws://bot.example/v1',
    );
    expect((await putBot('ws://plain.example/v1')).status).toBe(200);
    expect((await putBot('ws://bot.lan.example/v1')).status).toBe(200);
  });

  it('400s never quote a malformed bot_url holding credentials; the ws scheme is taken in any case', async () => {
    rig = await startRig({ providerUrl: null });
    for (const [url, shown] of [
      ['wss:/user:hunter2@bot.example', 'wss://bot.example/'],
      [' wss://user:hunter2@bot.example', 'wss://bot.example/'],
      ['wss://user:hun/ter2@bot.example', '(not a valid URL)'],
      ['wss://user:hun?ter2@bot.example', '(not a valid URL)'],
      ['wss://user:hun#ter2@bot.example', '(not a valid URL)'],
      ['user:hunter2@bot.example', '(not a valid URL)'],
      ['wss//user:hunter2@bot.example', '(not a valid URL)'],
    ]) {
      const r = await putBot(url!);
      expect({ url, status: r.status }).toEqual({ url, status: 400 });
      expect(r.message).toMatch(new RegExp(`^bot_url must be .*, got ${shown!.replace(/[()./]/g, '\\$&')}$`));
      expect(r.text).not.toMatch(/hunter2|hun|ter2|user/);
    }
    const upper = await call(rig.http, 'PUT', '/v1/media-stream', {
      token: await restToken(['media:manage']),
      body: { media_ws_url: 'wss://bridge.example/v1/media', bot_url: 'WSS://bot-user:pw@bot.example/v1' },
    });
    expect(upper.status).toBe(200);
    expect(upper.body.bot_url).toBe('wss://****@bot.example/v1');
  });

  it('builtin:tone:<hz> for a tenant: hz from 1 to half of BOT_SAMPLE_RATE', async () => {
    rig = await startRig({ providerUrl: null, env: { BOT_SAMPLE_RATE: '16000' } });
    const band =
      'bot_url must be builtin:tone:<hz> with hz from 1 to 8000 (half of BOT_SAMPLE_RATE, 16000), got';
    for (const url of ['builtin:tone:0', 'builtin:tone:8001', 'builtin:tone:99999999999999999999']) {
      expect(await putBot(url)).toMatchObject({ status: 400, message: `${band} ${JSON.stringify(url)}` });
    }
    for (const url of ['builtin:tone:1', 'builtin:tone:8000', 'builtin:tone']) {
      expect({ url, status: (await putBot(url)).status }).toEqual({ url, status: 200 });
    }
  });

  it('401 without a token, 403 without media:manage; auth is checked before the body', async () => {
    rig = await startRig({ providerUrl: null });
    const none = await call(rig.http, 'PUT', '/v1/media-stream', { body: { media_ws_url: 'nope' } });
    expect(none.status).toBe(401);
    const weak = await restToken(['calls:control']);
    const r = await call(rig.http, 'GET', '/v1/media-stream', { token: weak });
    expect(r.status).toBe(403);
    expect(r.body).toEqual({
      error: 'forbidden',
      message: 'token lacks the scope "media:manage" this route requires',
    });
  });

  it('the media_ws_url is logged without credentials or query', async () => {
    rig = await startRig({ providerUrl: null });
    const token = await restToken(['media:manage']);
    const media_ws_url = 'wss://tenant:pw-4711@bridge.example/v1/media?token=tok-4712';
    const r = await call(rig.http, 'PUT', '/v1/media-stream', { token, body: { media_ws_url } });
    expect(r.status).toBe(200);
    const line = rig.logs.find((l) => l.includes('media stream registered'));
    expect(line).toContain('"media_ws_url":"wss://bridge.example/v1/media"');
    for (const l of rig.logs) expect(l).not.toMatch(/pw-4711|tok-4712/);
  });

  it('a provider that echoes the media_secret in its refusal: neither the answer nor the logs carry it', async () => {
    const echoing = await tinyServer((_req, res, n) => {
      res.writeHead(n === 1 ? 400 : 500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'bad_request', message: `media_secret "${NEW_SECRET}" is too weak` }));
    });
    try {
      rig = await startRig({ providerUrl: `${echoing.url}/v1` });
      const token = await restToken(['media:manage']);
      const body = { media_ws_url: 'ws://h/v1/media', media_secret: NEW_SECRET };
      const refused = await call(rig.http, 'PUT', '/v1/media-stream', { token, body });
      expect(refused.status).toBe(400);
      expect(refused.body.message).toBe('media_secret "[redacted]" is too weak');
      // A 500 (retried once): the message goes into the 502's.
      const failed = await call(rig.http, 'PUT', '/v1/media-stream', { token, body });
      expect(failed.status).toBe(502);
      expect(failed.body.message).toContain('"[redacted]"');
      expect(rig.logs.filter((l) => l.includes('provider call failed'))).toHaveLength(2);
      for (const text of [refused.text, failed.text, ...rig.logs]) expect(text).not.toContain(NEW_SECRET);
    } finally {
      await echoing.close();
    }
  });

  it('local state changes only when the provider accepted the upsert', async () => {
    const refusing = await tinyServer((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: 'bad_request', message: 'media_ws_url is not reachable from the provider' }),
      );
    });
    try {
      rig = await startRig({ providerUrl: `${refusing.url}/v1` });
      const token = await restToken(['media:manage']);
      const body = { media_ws_url: 'ws://h/v1/media', media_secret: NEW_SECRET };
      const r = await call(rig.http, 'PUT', '/v1/media-stream', { token, body });
      expect(r.status).toBe(400);
      expect(r.body.message).toBe('media_ws_url is not reachable from the provider');
      expect(await rig.bridge.ctx.tenants.getMediaStream('default')).toBeUndefined();
      expect(await rig.bridge.ctx.tenants.getMediaSecret('default')).toBe(MEDIA_SECRET);
      await rig.close();

      rig = await startRig({ providerUrl: `http://127.0.0.1:${await closedPort()}/v1` });
      const down = await call(rig.http, 'PUT', '/v1/media-stream', { token, body });
      expect(down.status).toBe(503);
      expect(down.body.message).toMatch(/^provider media-stream upsert is unreachable/);
      expect(await rig.bridge.ctx.tenants.getMediaSecret('default')).toBe(MEDIA_SECRET);
      for (const line of rig.logs) expect(line).not.toContain(NEW_SECRET);
    } finally {
      await refusing.close();
    }
  });
});

describe('stored media stream at session_start', () => {
  let bridge: TestBridge | undefined;
  let provider: TestProvider | undefined;
  afterEach(async () => {
    provider?.close();
    provider = undefined;
    await bridge?.close();
    bridge = undefined;
  });

  /** Registers `body` for tenant "default", starts a call with `media`, returns its outbound chunk sizes. */
  async function chunkSizes(body: Record<string, unknown>, media: Record<string, unknown>) {
    bridge = await startBridge({ BOT_URL: 'builtin:tone:1000' });
    const put = await fetch(`${bridge.http}/v1/media-stream`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${await bridge.restToken(['media:manage'])}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify(body),
    });
    expect(put.status).toBe(200);
    provider = new TestProvider(bridge.mediaUrl, { token: await bridge.mediaToken() });
    await provider.start('stored-defaults-1', { media });
    await waitFor(() => provider!.audio.length >= 10, 3_000, 'tone audio');
    return new Set(provider.audio.map((a) => a.data.length));
  }

  it('a PUT with only media_ws_url leaves chunk_bytes to the default: 20 ms at the session rate', async () => {
    const sizes = await chunkSizes({ media_ws_url: 'ws://127.0.0.1:9/v1/media' }, { sample_rate: 16000 });
    expect([...sizes]).toEqual([640]);
  });

  it('a PUT with chunk_bytes is honoured at any session rate', async () => {
    const sizes = await chunkSizes(
      { media_ws_url: 'ws://127.0.0.1:9/v1/media', chunk_bytes: 480 },
      { sample_rate: 16000 },
    );
    expect([...sizes]).toEqual([480]);
  });
});
