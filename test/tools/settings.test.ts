/**
 * The tool settings of a bot, as both sources check them: each bad item named down to its field with
 * what is accepted (pure functions, then the PUT's 400), the fields refused on dialects that carry no
 * tools, webhook hosts held to BOT_URL_ALLOWED_HOSTS, `tool_secret` write-only (a hint on reads, never
 * the value), required beside a webhook tool, and sealed at rest in Redis, kept until replaced.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { BOT_DIALECT_DECLS } from '../../src/dialects/index.js';
import { checkHoldAudio, checkIdle, checkToolHoldMs, checkTools } from '../../src/tools/settings.js';
import { call } from '../helpers/http-call.js';
import { redisSkipReason, type TestRedis, useRedis } from '../helpers/redis.js';
import { startRig } from '../helpers/rig.js';
import { tenantStores } from '../state/tenant-stores.js';

/** The dialects that carry tools, in the registry's order: those that declare the `tools` field. */
const CARRIERS = BOT_DIALECT_DECLS.filter((d) => d.fields.some((f) => f.key === 'tools'))
  .map((d) => d.name)
  .join(', ');

const HOOK = {
  name: 'lookup',
  description: 'Looks up.',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
  url: 'https://tools.example/lookup',
};

const problemOf = (r: { problem?: { message: string } } | object) =>
  'problem' in r ? (r.problem as { message: string }).message : undefined;

describe('tool settings', () => {
  it('name each bad item and what it accepts', () => {
    const cases: [unknown, string][] = [
      ['consult', ''],
      [
        ['transfer'],
        'bot.tools[0] must be a built-in tool\'s name (end_call, consult, conference, send_dtmf, send_message) or a webhook tool object, got "transfer"',
      ],
      [['consult', 'consult'], 'bot.tools[1] repeats the tool name "consult"'],
      [[{ ...HOOK, name: 'Look Up' }], 'bot.tools[0].name must be 1 to 64 characters of a-z, 0-9 and _'],
      [[{ ...HOOK, name: 'consult' }], 'bot.tools[0].name must be 1 to 64 characters'],
      [[HOOK, HOOK], 'bot.tools[1].name repeats the tool name "lookup"'],
      [
        [{ ...HOOK, description: '' }],
        'bot.tools[0].description must be a string of 1 to 1024 characters, got 0 characters',
      ],
      [
        [{ ...HOOK, parameters: { type: 'array' } }],
        'bot.tools[0].parameters must be a JSON Schema object with "type": "object"',
      ],
      [
        [
          {
            ...HOOK,
            parameters: { type: 'object', properties: { q: { type: 'string', pattern: '^(a+)+$' } } },
          },
        ],
        'unknown keyword: "pattern"',
      ],
      [[{ ...HOOK, parameters: { type: 'object', requried: ['q'] } }], 'unknown keyword: "requried"'],
      [
        [{ ...HOOK, url: 'ftp://tools.example/x' }],
        'bot.tools[0].url must be an http:// or https:// URL of at most 2048 characters, got ftp://tools.example/x',
      ],
      [[{ ...HOOK, url: 'https://user:pw@' }], 'bot.tools[0].url must be an http:// or https:// URL'],
      [
        [{ ...HOOK, timeout_ms: 30_001 }],
        'bot.tools[0].timeout_ms must be an integer from 100 to 30000 (default 10000), got 30001',
      ],
      [
        [{ ...HOOK, retries: 2 }],
        'bot.tools[0].retries is not a field of a webhook tool; accepted: name, description, parameters, url, timeout_ms',
      ],
    ];
    expect(problemOf(checkTools(cases[0]![0], 'bot.tools'))).toMatch(/must be an array/);
    for (const [value, want] of cases.slice(1))
      expect(problemOf(checkTools(value, 'bot.tools'))).toContain(want);
    // Kept as written: timeout_ms stays absent when left out.
    expect(checkTools(['end_call', HOOK], 'bot.tools')).toEqual({ value: ['end_call', HOOK] });
    expect(problemOf(checkHoldAudio('jazz', 'bot.hold_audio'))).toBe(
      'bot.hold_audio must be builtin:hold (default), none, or wav:<path>, got "jazz"',
    );
    expect(problemOf(checkToolHoldMs(-1, 'bot.tool_hold_ms'))).toMatch(/from 0 to 30000/);
    expect(problemOf(checkIdle({}, 'bot.idle'))).toMatch(/neither bound/);
    expect(problemOf(checkIdle({ reprompt_after_ms: 5000, hangup_after_ms: 5000 }, 'bot.idle'))).toMatch(
      /^bot\.idle\.hangup_after_ms must be above reprompt_after_ms/,
    );
    expect(checkIdle({ hangup_after_ms: 60_000 }, 'bot.idle')).toEqual({
      value: { hangup_after_ms: 60_000 },
    });
  });

  it('the environment twins: JSON and integers, each problem naming its variable', () => {
    const env = { BOT_URL: 'ws://127.0.0.1:1/bot' };
    expect(() => loadConfig({ ...env, BOT_TOOLS: '["consult"' })).toThrow(
      /BOT_TOOLS must be an array of at most 32 tools, .*, as JSON, got text that is not JSON/,
    );
    expect(() => loadConfig({ ...env, BOT_TOOL_HOLD_MS: '1s' })).toThrow(
      /BOT_TOOL_HOLD_MS must be an integer from 0 to 30000 \(default 1000\), got a string/,
    );
    expect(() => loadConfig({ ...env, BOT_IDLE: '{"hangup_after_ms":10}' })).toThrow(
      /BOT_IDLE.hangup_after_ms must be an integer from 1000/,
    );
    expect(() => loadConfig({ BOT_URL: 'builtin:echo', BOT_TOOLS: '["end_call"]' })).toThrow(
      /BOT_TOOLS does not apply to dialect builtin/,
    );
    const c = loadConfig({ ...env, BOT_TOOLS: '["end_call"]', BOT_HOLD_AUDIO: 'none', BOT_TOOL_SECRET: 'k' });
    expect(c.bot).toMatchObject({ tools: ['end_call'], holdAudio: 'none' });
    expect(c.botToolSecret).toBe('k');
  });

  it('PUT /v1/media-stream: 400s naming the item, tool_secret write-only and required beside a webhook tool', async () => {
    await using rig = await startRig({ env: { BOT_URL_ALLOWED_HOSTS: 'rt.example,tools.example' } });
    const token = await rig.restToken(['media:manage']);
    const put = (body: Record<string, unknown>) =>
      call(rig.http, 'PUT', '/v1/media-stream', {
        token,
        body: { media_ws_url: 'wss://media.example/v1/media', ...body },
      });
    const bot = (more: Record<string, unknown>) => ({
      bot: { dialect: 'openai-realtime', url: 'wss://rt.example/v1/realtime', ...more },
    });
    const cases: [Record<string, unknown>, string][] = [
      [
        bot({ tools: ['consult', { ...HOOK, url: 'https://elsewhere.example/x' }] }),
        'bot.tools[1].url must be an https:// URL whose host the operator has listed in BOT_URL_ALLOWED_HOSTS, got https://elsewhere.example/x',
      ],
      [
        bot({ tools: ['consult'], idle: { reprompt_after_ms: 500 } }),
        'bot.idle.reprompt_after_ms must be an integer from 1000 to 3600000, got 500',
      ],
      [
        bot({ hold_audio: 'wav:/etc/passwd' }),
        'bot.hold_audio must be builtin:hold or none (a WAV file is refused: the bridge has no BOT_WAV_DIR)',
      ],
      [
        { bot: { dialect: 'twilio', url: 'wss://rt.example/b', tools: ['end_call'] } },
        `bot.tools does not apply to dialect twilio (only to ${CARRIERS})`,
      ],
      [
        bot({ tools: [HOOK] }),
        "bot.tools[0] is a webhook tool, whose calls are signed with the tenant's tool_secret",
      ],
      [
        { ...bot({ tools: [HOOK] }), tool_secret: 'short' },
        'tool_secret must be a string of 16 to 512 characters',
      ],
    ];
    // An https URL without a port is on 443, as a wss one is.
    const port443 = await startRig({ env: { BOT_URL_ALLOWED_HOSTS: 'rt.example,tools.example:443' } });
    try {
      const r = await call(port443.http, 'PUT', '/v1/media-stream', {
        token: await port443.restToken(['media:manage']),
        body: {
          media_ws_url: 'wss://media.example/v1/media',
          tool_secret: 'ts-0000000000000000',
          ...bot({ tools: [HOOK] }),
        },
      });
      expect(r.status, r.text).toBe(200);
    } finally {
      await port443.close();
    }
    for (const [body, want] of cases) {
      const r = await put(body);
      expect({ status: r.status, message: r.body.message }).toEqual({
        status: 400,
        message: expect.stringContaining(want),
      });
    }
    const secret = 'ts-2b8e11c04f7aa19d';
    const ok = await put({
      ...bot({
        api_key: 'sk-test-key-0000',
        tools: ['end_call', { ...HOOK, url: 'https://tools.example/lookup?key=zz9' }],
        hold_audio: 'none',
        tool_hold_ms: 1500,
        idle: { reprompt_after_ms: 8000, hangup_after_ms: 20_000 },
      }),
      tool_secret: secret,
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.text).not.toContain(secret);
    expect(ok.text).not.toContain('zz9');
    expect(ok.body.tool_secret_hint).toBe('****9d');
    expect(ok.body.bot).toMatchObject({
      tools: ['end_call', { ...HOOK, url: 'https://tools.example/lookup?key=****' }],
      hold_audio: 'none',
      tool_hold_ms: 1500,
      idle: { reprompt_after_ms: 8000, hangup_after_ms: 20_000 },
    });
    // Kept until replaced: the next PUT with a webhook tool needs no secret again.
    const again = await put({ ...bot({ tools: [HOOK] }) });
    expect(again.status, again.text).toBe(200);
    expect(again.body.tool_secret_hint).toBe('****9d');
    expect(await rig.bridge.ctx.tenants.getToolSecret('default')).toBe(secret);
  });
});

const skip = redisSkipReason('tools/settings.test.ts');

describe.skipIf(skip !== undefined)('tool_secret in Redis', () => {
  let redis: TestRedis | undefined;
  const prefix = `tool-secret-${process.pid}-${Date.now()}:`;
  const stores = tenantStores(prefix);
  afterEach(async () => {
    await stores.close();
    await redis?.stop();
    redis = undefined;
  });

  it('is sealed under its own field, read by another instance with the key, kept when a PUT leaves it out', async () => {
    redis = await useRedis();
    const key = randomBytes(32);
    const a = await stores.open(redis.url, key);
    const b = await stores.open(redis.url, key);
    const config = { tenant: 'acme', media_ws_url: 'wss://m.example/v1/media', channels: 1 } as const;
    await a.putMediaStream(config, undefined, undefined, 'acme-tool-secret-7Qx2');
    await vi.waitFor(async () => expect(await b.getToolSecret('acme')).toBe('acme-tool-secret-7Qx2'), {
      timeout: 3_000,
    });
    await a.putMediaStream(config, undefined);
    expect(await (await stores.open(redis.url, key)).getToolSecret('acme')).toBe('acme-tool-secret-7Qx2');
    const client = new Redis(redis.url);
    try {
      const raw = await client.hgetall(`${prefix}tenant:acme`);
      expect(raw.tool_secret).toMatch(/^v1\./);
      expect(JSON.stringify(raw)).not.toContain('7Qx2');
    } finally {
      client.disconnect();
    }
    expect(await (await stores.open(redis.url, randomBytes(32))).getToolSecret('acme')).toBeUndefined();
  });
});
