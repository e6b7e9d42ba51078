/**
 * `POST /v1/webhooks/messaging` on a real bridge over loopback: chat and RCS payloads, duplicates
 * counted once, the webhook secret, malformed posts, events reaching the ws bot of the call a message
 * was sent in, and `GET /v1/messages/{id}` for the sending tenant only. The messaging provider here is a
 * stand-in client answering with fixed ids: these tests post the provider's webhooks themselves.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { type Bridge, createBridge } from '../../src/app.js';
import { mintToken } from '../../src/auth/jwt.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import type { MessagingClient, RcsCampaignRequest } from '../../src/provider/messaging/types.js';
import { type BotConnection, TestBot } from '../helpers/bot.js';
import { TestProvider } from '../helpers/provider.js';
import { redisSkipReason, type TestRedis, useRedis } from '../helpers/redis.js';
import { call } from './harness.js';

const AUTH_SECRET = 'messaging-test-auth-secret';
const MEDIA_SECRET = 'messaging-test-media-secret';
const WEBHOOK_SECRET = 'messaging-test-webhook-secret-0123';
const PHONE = '+14155550100';

/** A stand-in for the provider's messaging API: numbered message and campaign ids, nothing else. */
function stubMessaging(): MessagingClient & { sends: unknown[]; campaigns: RcsCampaignRequest[] } {
  let n = 0;
  const sends: unknown[] = [];
  const campaigns: RcsCampaignRequest[] = [];
  const no = async () => {
    throw new Error('not used here');
  };
  return {
    sends,
    campaigns,
    async sendChatMessage(req) {
      sends.push(req);
      return {
        success: true,
        data: { message_id: `wamid.${++n}.${Date.now()}`, wa_id: req.to, status: 'sent' },
        performance: { total_time_ms: 1 },
      };
    },
    async launchRcsCampaign(req) {
      campaigns.push(req);
      return { status: 'launched', campaign_id: `camp-${++n}`, messages_queued: req.contacts.length };
    },
    listChatTemplates: no,
    createChatTemplate: no,
    getChatTemplateStatus: no,
    syncChatTemplates: no,
    deleteChatTemplate: no,
    createChatCampaign: no,
    launchChatCampaign: no,
    createRcsTemplate: no,
    async close() {},
  };
}

interface Rig {
  readonly bridge: Bridge;
  readonly http: string;
  readonly logs: string[];
  close(): Promise<void>;
}

async function startBridge(env: Record<string, string> = {}, messaging?: MessagingClient): Promise<Rig> {
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DSP_WORKERS: '0',
    AUTH_JWT_SECRET: AUTH_SECRET,
    MEDIA_SECRET,
    MESSAGING_WEBHOOK_SECRET: WEBHOOK_SECRET,
    ...env,
  });
  const logs: string[] = [];
  const log = createLogger('debug', { write: (line: string) => void logs.push(line) });
  const bridge = await createBridge(config, { log, ...(messaging === undefined ? {} : { messaging }) });
  const http = await bridge.listen();
  return { bridge, http, logs, close: () => bridge.close() };
}

const restToken = (scopes: string[], tenant?: string) =>
  mintToken({ secret: AUTH_SECRET, scopes, ...(tenant !== undefined ? { tenant } : {}) });

async function post(http: string, body: unknown, o: { token?: string | null; query?: boolean } = {}) {
  const token = o.token === undefined ? WEBHOOK_SECRET : o.token;
  const path =
    o.query === true && token !== null ? `/v1/webhooks/messaging?token=${token}` : '/v1/webhooks/messaging';
  const res = await fetch(`${http}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token !== null && o.query !== true ? { authorization: `Bearer ${token}` } : {}),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const chatStatuses = (id: string, ...statuses: string[]) => ({
  object: 'chat',
  entry: [
    {
      changes: [
        {
          field: 'messages',
          value: {
            statuses: statuses.map((status, i) => ({
              id,
              status,
              timestamp: new Date(Date.now() + i).toISOString(),
              recipient_id: '14155550100',
            })),
          },
        },
      ],
    },
  ],
});

const chatButton = (id: string, buttonId: string, timestamp = new Date().toISOString()) => ({
  object: 'chat',
  entry: [
    {
      changes: [
        {
          field: 'messages',
          value: {
            messages: [
              {
                id: `in-${buttonId}`,
                from: '14155550100',
                timestamp,
                type: 'interactive',
                interactive: { type: 'button_reply', button_reply: { id: buttonId, title: 'Yes please' } },
                context: { id },
              },
            ],
          },
        },
      ],
    },
  ],
});

const rcsStatus = (id: string, status: string, recipient = '4155550100') => ({
  event_type: 'delivery_status',
  timestamp: new Date().toISOString(),
  message_id: id,
  bot_id: 'bot-1',
  recipient,
  status,
});

/** A call held by `rig` whose ws bot is `bot`'s connection. */
async function liveCall(rig: Rig, bot: TestBot, sessionId: string, tenant?: string) {
  const provider = new TestProvider(`${rig.http.replace('http', 'ws')}/v1/media`, {
    token: await mintToken({ secret: MEDIA_SECRET, ttlSeconds: 600, ...(tenant ? { tenant } : {}) }),
  });
  await provider.start(sessionId, { customer_phone: PHONE });
  const conn = await bot.waitConnection(bot.connections.length);
  return { provider, conn };
}

const notices = (conn: BotConnection, event: string) => conn.events.filter((e) => e.event === event);

describe('messaging webhooks', () => {
  const open: { close(): unknown }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });

  async function rigWithCall(env: Record<string, string> = {}) {
    const bot = await TestBot.start({ echo: false });
    const messaging = stubMessaging();
    const rig = await startBridge({ BOT_URL: bot.url, ...env }, messaging);
    open.push(bot, rig);
    const { provider, conn } = await liveCall(rig, bot, 'call-1');
    open.push(provider);
    const token = await restToken(['calls:control', 'messages:read']);
    return { bot, rig, conn, token, messaging };
  }

  it('chat: statuses and a tapped button reach the call bot once; duplicates are counted, not forwarded', async () => {
    const { rig, conn, token } = await rigWithCall();
    const sent = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: { channel: 'chat', message: { type: 'text', text: { body: 'Your code is 1234' } } },
    });
    expect(sent.status).toBe(200);
    const id = sent.body.message_id as string;
    expect(sent.body).toEqual({ channel: 'chat', message_id: id, status: 'sent', session_id: 'call-1' });

    const first = await post(rig.http, chatStatuses(id, 'sent', 'delivered'));
    expect(first).toEqual({ status: 200, body: { received: 2, duplicates: 0 } });
    const tap = chatButton(id, 'yes');
    expect((await post(rig.http, tap)).body).toEqual({ received: 1, duplicates: 0 });
    await conn.waitEvent('message_button');
    const delivered = await conn.waitEvent('message_status', 5_000, (e) => e.status === 'delivered');
    expect(delivered).toMatchObject({
      event: 'message_status',
      channel: 'chat',
      message_id: id,
      recipient: '14155550100',
    });
    expect(notices(conn, 'message_button')[0]).toMatchObject({
      channel: 'chat',
      message_id: id,
      from: '14155550100',
      button_id: 'yes',
      button_text: 'Yes please',
    });

    // The provider delivers again (a retry after a lost answer): counted once.
    expect((await post(rig.http, chatStatuses(id, 'sent', 'delivered'))).body).toEqual({
      received: 2,
      duplicates: 2,
    });
    expect((await post(rig.http, tap)).body).toEqual({ received: 1, duplicates: 1 });
    // A read after a delivered: new.
    expect((await post(rig.http, chatStatuses(id, 'read'))).body).toEqual({ received: 1, duplicates: 0 });
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'read');
    await new Promise((r) => setTimeout(r, 100));
    expect(notices(conn, 'message_status').map((e) => e.status)).toEqual(['sent', 'delivered', 'read']);
    expect(notices(conn, 'message_button')).toHaveLength(1);

    const rec = await call(rig.http, 'GET', `/v1/messages/${encodeURIComponent(id)}`, { token });
    expect(rec.status).toBe(200);
    expect(rec.body).toMatchObject({
      message_id: id,
      channel: 'chat',
      session_id: 'call-1',
      to: '14155550100',
      kind: 'text',
      status: 'read',
    });
    expect((rec.body.events as unknown[]).length).toBe(4);
    // Never the message text, nor the webhook secret, in the logs.
    const logs = rig.logs.join('\n');
    expect(logs).not.toContain('Your code is 1234');
    expect(logs).not.toContain(WEBHOOK_SECRET);
  });

  it('RCS: the send adopts the message id of the first event for its 10 digits; an array of events', async () => {
    const { rig, conn, token, messaging } = await rigWithCall();
    const sent = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: { channel: 'rcs', template_name: 'order_update', params: { name: 'Ada' } },
    });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({
      channel: 'rcs',
      message_id: null,
      status: 'queued',
      session_id: 'call-1',
    });
    const campaign = sent.body.campaign_id as string;
    expect(messaging.campaigns[0]).toMatchObject({
      template_name: 'order_update',
      contacts: [{ mobile: '4155550100', params: { name: 'Ada' } }],
    });
    expect(messaging.campaigns[0]!.campaign_name).toMatch(/^call_call_1_\d+_[0-9a-f]{6}$/);

    const events = [
      rcsStatus('rcs-msg-1', 'sent', '+14155550100'),
      rcsStatus('rcs-msg-1', 'delivered'),
      {
        event_type: 'button_click',
        timestamp: new Date().toISOString(),
        message_id: 'rcs-msg-1',
        bot_id: 'bot-1',
        user_phone: '4155550100',
        interaction: { type: 'action', button_text: 'Track order', postback_data: 'track' },
      },
    ];
    expect((await post(rig.http, events)).body).toEqual({ received: 3, duplicates: 0 });
    const button = await conn.waitEvent('message_button');
    expect(button).toMatchObject({
      channel: 'rcs',
      message_id: 'rcs-msg-1',
      from: '4155550100',
      button_id: 'track',
      button_text: 'Track order',
    });
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'delivered');
    // One event alone (not in an array), and its duplicate.
    expect((await post(rig.http, rcsStatus('rcs-msg-1', 'read'))).body).toEqual({
      received: 1,
      duplicates: 0,
    });
    expect((await post(rig.http, [rcsStatus('rcs-msg-1', 'read')])).body).toEqual({
      received: 1,
      duplicates: 1,
    });
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'read');

    const rec = await call(rig.http, 'GET', '/v1/messages/rcs-msg-1', { token });
    expect(rec.body).toMatchObject({
      message_id: 'rcs-msg-1',
      channel: 'rcs',
      campaign_id: campaign,
      kind: 'rcs_template',
      to: '4155550100',
      status: 'read',
    });
  });

  it('a failed status carries its error to the bot, and failed stays the status', async () => {
    const { rig, conn, token } = await rigWithCall();
    const sent = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: {
        channel: 'chat',
        template: { name: 'appointment_reminder', language: 'en_US', body_params: ['3pm'] },
      },
    });
    expect(sent.status).toBe(200);
    const id = sent.body.message_id as string;
    const failed = chatStatuses(id, 'failed');
    const st = failed.entry[0]!.changes[0]!.value.statuses[0]! as Record<string, unknown>;
    st.errors = [{ code: 131026, title: 'Message undeliverable' }];
    await post(rig.http, failed);
    await post(rig.http, chatStatuses(id, 'delivered'));
    const ev = await conn.waitEvent('message_status', 5_000, (e) => e.status === 'failed');
    expect(ev.error).toEqual({ code: '131026', message: 'Message undeliverable' });
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'delivered');
    const rec = await call(rig.http, 'GET', `/v1/messages/${encodeURIComponent(id)}`, { token });
    expect(rec.body).toMatchObject({ status: 'failed', kind: 'template' });
  });

  it('records are visible to the sending tenant only; the route needs messages:read', async () => {
    const { rig, token } = await rigWithCall();
    const sent = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } },
    });
    const path = `/v1/messages/${encodeURIComponent(sent.body.message_id as string)}`;
    expect((await call(rig.http, 'GET', path, { token })).status).toBe(200);
    const other = await call(rig.http, 'GET', path, { token: await restToken(['messages:read'], 'acme') });
    expect(other.status).toBe(404);
    expect(other.body.error).toBe('not_found');
    expect((await call(rig.http, 'GET', path, { token: await restToken(['calls:control']) })).status).toBe(
      403,
    );
    expect((await call(rig.http, 'GET', path)).status).toBe(401);
    expect((await call(rig.http, 'GET', '/v1/messages/nope', { token })).status).toBe(404);
  });

  it('401 without the webhook secret, or with a wrong one; header or ?token= accepted', async () => {
    const rig = await startBridge();
    open.push(rig);
    const body = rcsStatus('m-auth', 'sent');
    for (const token of [null, 'wrong-secret', `${WEBHOOK_SECRET}x`]) {
      const r = await post(rig.http, body, { token });
      expect(r.status, String(token)).toBe(401);
      expect(r.body.error).toBe('unauthorized');
      expect(JSON.stringify(r.body)).not.toContain(WEBHOOK_SECRET);
    }
    expect((await post(rig.http, body, { token: 'wrong', query: true })).status).toBe(401);
    expect((await post(rig.http, body, { query: true })).body).toEqual({ received: 1, duplicates: 0 });
    expect((await post(rig.http, body)).body).toEqual({ received: 1, duplicates: 1 });
    // A header that is not a bearer token leaves the query's token to decide.
    const basic = await fetch(`${rig.http}/v1/webhooks/messaging?token=${WEBHOOK_SECRET}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Basic dXNlcjpwYXNz' },
      body: JSON.stringify(body),
    });
    expect(basic.status).toBe(200);
  });

  it('without MESSAGING_WEBHOOK_SECRET posts need no token, and start-up says so', async () => {
    const rig = await startBridge({ MESSAGING_WEBHOOK_SECRET: '' });
    open.push(rig);
    expect((await post(rig.http, rcsStatus('m-open', 'sent'), { token: null })).status).toBe(200);
    expect(rig.logs.join('\n')).toMatch(/MESSAGING_WEBHOOK_SECRET is not set/);
  });

  it('in production without a webhook secret (messaging off) every post is refused', async () => {
    const rig = await startBridge({
      NODE_ENV: 'production',
      PROVIDER_BASE_URL: 'http://127.0.0.1:9/v1',
      MESSAGING_WEBHOOK_SECRET: '',
    });
    open.push(rig);
    const r = await post(rig.http, rcsStatus('m-prod', 'sent'), { token: null });
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(/MESSAGING_WEBHOOK_SECRET is not set/);
    expect(rig.logs.join('\n')).not.toMatch(/accepts posts without a token/);
  });

  it('400 naming what is wrong in a malformed post; nothing from it is counted', async () => {
    const rig = await startBridge();
    open.push(rig);
    const cases: [unknown, RegExp][] = [
      [{ hello: 'world' }, /must be a chat payload .* an RCS event .* or an array of RCS events/],
      [[], /empty array/],
      [
        { ...rcsStatus('m-bad', 'sent'), status: 'bounced' },
        /^status must be sent, delivered, read, failed, got "bounced"$/,
      ],
      [
        { ...rcsStatus('m-bad', 'sent'), event_type: 'opened' },
        /^event_type must be delivery_status or button_click/,
      ],
      [
        [rcsStatus('m-bad', 'sent'), { ...rcsStatus('m-bad', 'read'), timestamp: 'yesterday' }],
        /^\[1\]\.timestamp must be an ISO 8601 timestamp, got "yesterday"$/,
      ],
      [{ object: 'chat', entry: {} }, /^entry must be an array, got a object$/],
      [
        {
          object: 'chat',
          entry: [
            { changes: [{ field: 'messages', value: { statuses: [{ id: 'm-bad', status: 'sent' }] } }] },
          ],
        },
        /^entry\[0\]\.changes\[0\]\.value\.statuses\[0\]\.timestamp must be an ISO 8601 timestamp, got nothing$/,
      ],
      [
        {
          ...chatButton('m-bad', 'b'),
          entry: [
            {
              changes: [
                {
                  field: 'messages',
                  value: {
                    messages: [
                      {
                        id: 'x',
                        from: '1',
                        timestamp: new Date().toISOString(),
                        type: 'button',
                        button: { payload: 'p', text: 't' },
                      },
                    ],
                  },
                },
              ],
            },
          ],
        },
        /context must be an object, got nothing/,
      ],
    ];
    for (const [body, message] of cases) {
      const r = await post(rig.http, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.message).toMatch(message);
    }
    // Not JSON at all.
    expect((await post(rig.http, '{"object": "chat", ')).status).toBe(400);
    // The valid event of the refused array was not counted: it is new now.
    expect((await post(rig.http, rcsStatus('m-bad', 'sent'))).body).toEqual({ received: 1, duplicates: 0 });
  });

  it('inbound texts and other replies are not events; a batch larger than a REST body is taken whole', async () => {
    const rig = await startBridge();
    open.push(rig);
    const now = new Date().toISOString();
    const inbound = {
      object: 'chat',
      entry: [
        {
          changes: [
            { field: 'message_template_status_update', value: {} },
            {
              field: 'messages',
              value: {
                messages: [
                  {
                    id: 'in-1',
                    from: '14155550100',
                    timestamp: now,
                    type: 'text',
                    text: { body: 'hello there' },
                  },
                  {
                    id: 'in-2',
                    from: '14155550100',
                    timestamp: now,
                    type: 'interactive',
                    interactive: { type: 'list_reply', list_reply: { id: 'r1', title: 'One' } },
                  },
                ],
                statuses: [{ id: 'm-in', status: 'sent', timestamp: now, recipient_id: '14155550100' }],
              },
            },
          ],
        },
      ],
    };
    expect((await post(rig.http, inbound)).body).toEqual({ received: 1, duplicates: 0 });
    expect(rig.logs.join('\n')).not.toContain('hello there');
    // 600 events, ~110 KB: over BODY_LIMIT_BYTES (64 KB), under the webhook's own bound.
    const batch = Array.from({ length: 600 }, (_, i) => rcsStatus(`m-batch-${i}`, 'delivered'));
    expect(JSON.stringify(batch).length).toBeGreaterThan(65_536);
    expect((await post(rig.http, batch)).body).toEqual({ received: 600, duplicates: 0 });
    const tooMany = Array.from({ length: 1_001 }, (_, i) => rcsStatus(`m-many-${i}`, 'read'));
    const r = await post(rig.http, tooMany);
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/at most 1000 events/);
  });

  it('any body, or a valid one with a field made wrong, is 200 or a 400 with the contract body', async () => {
    const rig = await startBridge({ REST_RATE_LIMIT: '1000000' });
    open.push(rig);
    const wrong = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.string({ unit: 'grapheme', maxLength: 30 }),
      fc.constant(null),
      fc.constant(undefined),
      fc.integer(),
    );
    /** Sets `path` (keys and indexes) in a copy of `v` to `value`. */
    const setAt = (v: unknown, path: (string | number)[], value: unknown): unknown => {
      if (path.length === 0) return value;
      const [k, ...rest] = path;
      const copy = (Array.isArray(v) ? [...v] : { ...(v as object) }) as Record<string | number, unknown>;
      copy[k!] = setAt(copy[k!], rest, value);
      return copy;
    };
    const chat = chatStatuses('m-fuzz', 'sent');
    const tap = chatButton('m-fuzz', 'b1');
    const paths: [unknown, (string | number)[]][] = [
      [chat, ['object']],
      [chat, ['entry']],
      [chat, ['entry', 0]],
      [chat, ['entry', 0, 'changes']],
      [chat, ['entry', 0, 'changes', 0, 'value']],
      [chat, ['entry', 0, 'changes', 0, 'value', 'statuses', 0, 'status']],
      [chat, ['entry', 0, 'changes', 0, 'value', 'statuses', 0, 'errors']],
      [chat, ['entry', 0, 'changes', 0, 'value', 'statuses', 0, 'id']],
      [tap, ['entry', 0, 'changes', 0, 'value', 'messages', 0, 'interactive']],
      [tap, ['entry', 0, 'changes', 0, 'value', 'messages', 0, 'context']],
      [tap, ['entry', 0, 'changes', 0, 'value', 'messages', 0, 'type']],
      [rcsStatus('m-fuzz', 'read'), ['error']],
      [rcsStatus('m-fuzz', 'read'), ['recipient']],
      [rcsStatus('m-fuzz', 'read'), ['event_type']],
      [[rcsStatus('m-fuzz', 'read')], [0, 'message_id']],
    ];
    const body = fc.oneof(
      fc.jsonValue({ maxDepth: 4 }),
      fc.tuple(fc.constantFrom(...paths), wrong).map(([[v, path], value]) => setAt(v, path, value)),
    );
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const r = await post(rig.http, JSON.stringify(b) ?? 'null');
        expect([200, 400], JSON.stringify(b)).toContain(r.status);
        if (r.status === 200) {
          expect(Object.keys(r.body).sort()).toEqual(['duplicates', 'received']);
        } else {
          expect(['bad_request', 'invalid_field']).toContain(r.body.error);
          expect(typeof r.body.message).toBe('string');
        }
      }),
      { numRuns: 300 },
    );
  });

  it('an event that comes while the bot is being redialled reaches it after its session_start', async () => {
    const bot = await TestBot.start({ echo: false });
    const port = Number(new URL(bot.url).port);
    const rig = await startBridge(
      { BOT_URL: bot.url, BOT_RETRY_BASE_MS: '100', BOT_RETRIES: '8' },
      stubMessaging(),
    );
    open.push(rig);
    const { provider } = await liveCall(rig, bot, 'call-r');
    open.push(provider);
    const token = await restToken(['calls:control']);
    const sent = await call(rig.http, 'POST', '/v1/sessions/call-r/message', {
      token,
      body: { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } },
    });
    const id = sent.body.message_id as string;
    await bot.close();
    // The provider hears the bot is lost: the bridge is redialling it.
    await provider.waitEvent('error', 5_000, (e) => e.code === 'bot_unavailable');
    expect((await post(rig.http, chatStatuses(id, 'delivered'))).body).toEqual({
      received: 1,
      duplicates: 0,
    });
    await new Promise((r) => setTimeout(r, 50));
    const back = await TestBot.start({ echo: false, port });
    open.push(back);
    const conn = await back.waitConnection(0, 10_000);
    const ev = await conn.waitEvent('message_status', 5_000);
    expect(ev).toMatchObject({ message_id: id, status: 'delivered' });
    expect(conn.events.findIndex((e) => e.event === 'session_start')).toBeLessThan(
      conn.events.findIndex((e) => e.event === 'message_status'),
    );
  });

  it('events for a message the bridge did not send reach no bot', async () => {
    const { rig, conn } = await rigWithCall();
    expect((await post(rig.http, chatStatuses('unknown-msg', 'delivered'))).body).toEqual({
      received: 1,
      duplicates: 0,
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(notices(conn, 'message_status')).toHaveLength(0);
  });
});

const skip = redisSkipReason();
if (skip !== undefined) console.warn(`control/messaging-webhooks.test.ts: ${skip}`);

describe.skipIf(skip !== undefined)('messaging webhooks across instances (Redis)', () => {
  let redis: TestRedis | undefined;
  const open: { close(): unknown }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
    await redis?.stop();
    redis = undefined;
  });

  it('an event posted to another instance reaches the bot of the call this one holds, counted once', async () => {
    redis = await useRedis();
    const env = { STATE_STORE: redis.url, STATE_KEY_PREFIX: `mw-${process.pid}-${Date.now()}:` };
    const bot = await TestBot.start({ echo: false });
    open.push(bot);
    const a = await startBridge({ ...env, BOT_URL: bot.url }, stubMessaging());
    open.push(a);
    const b = await startBridge({ ...env, BOT_URL: bot.url }, stubMessaging());
    open.push(b);
    const { provider, conn } = await liveCall(a, bot, 'call-x');
    open.push(provider);
    const token = await restToken(['calls:control', 'messages:read']);
    // Sent through instance b, which finds a's call in the shared registry.
    let sent = await call(b.http, 'POST', '/v1/sessions/call-x/message', {
      token,
      body: { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } },
    });
    for (let i = 0; i < 50 && sent.status === 404; i++) {
      await new Promise((r) => setTimeout(r, 20));
      sent = await call(b.http, 'POST', '/v1/sessions/call-x/message', {
        token,
        body: { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } },
      });
    }
    expect(sent.status).toBe(200);
    const id = sent.body.message_id as string;
    // Posted to b, which does not hold the call: published, and delivered by a.
    expect((await post(b.http, chatStatuses(id, 'delivered'))).body).toEqual({ received: 1, duplicates: 0 });
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'delivered');
    expect((await post(a.http, chatStatuses(id, 'delivered'))).body).toEqual({ received: 1, duplicates: 1 });
    // The same delivery reaching both instances at once: one counts it.
    const [x, y] = await Promise.all([
      post(b.http, chatStatuses(id, 'read')),
      post(a.http, chatStatuses(id, 'read')),
    ]);
    expect((x.body.duplicates as number) + (y.body.duplicates as number)).toBe(1);
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'read');
    await new Promise((r) => setTimeout(r, 100));
    expect(notices(conn, 'message_status').map((e) => e.status)).toEqual(['delivered', 'read']);
    const rec = await call(a.http, 'GET', `/v1/messages/${encodeURIComponent(id)}`, { token });
    expect(rec.body).toMatchObject({ status: 'read', session_id: 'call-x' });
  });
});
