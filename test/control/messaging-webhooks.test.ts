/**
 * `POST /v1/webhooks/messaging` on a real bridge over loopback: chat and RCS payloads, duplicates
 * counted once, the webhook secret, malformed posts and bad events in good ones, a store failure
 * answered 503 and its retry recorded, events reaching the ws bot of the call a message was sent in (an
 * RCS send's only by its own first event), and `GET /v1/messages/{id}` for the sending tenant only. The
 * messaging provider here is a stand-in client answering with fixed ids: these tests post the
 * provider's webhooks themselves.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { type Bridge, createBridge } from '../../src/app.js';
import { mintToken } from '../../src/auth/jwt.js';
import { loadConfig } from '../../src/config.js';
import { BridgeError } from '../../src/errors.js';
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
/** A number RCS goes to (MESSAGING_RCS_COUNTRY_CODE 91 by default), and its 10-digit mobile. */
const RCS_PHONE = '+91 98765 43210';
const RCS_MOBILE = '9876543210';

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

const rcsButton = (id: string, from: string) => ({
  event_type: 'button_click',
  timestamp: new Date().toISOString(),
  message_id: id,
  bot_id: 'bot-1',
  user_phone: from,
  interaction: { type: 'action', button_text: 'Track order', postback_data: 'track' },
});

/** A call held by `rig` whose ws bot is `bot`'s connection. */
async function liveCall(
  rig: Rig,
  bot: TestBot,
  sessionId: string,
  o: { tenant?: string; secret?: string; phone?: string } = {},
) {
  const provider = new TestProvider(`${rig.http.replace('http', 'ws')}/v1/media`, {
    token: await mintToken({
      secret: o.secret ?? MEDIA_SECRET,
      ttlSeconds: 600,
      ...(o.tenant ? { tenant: o.tenant } : {}),
    }),
  });
  await provider.start(sessionId, { customer_phone: o.phone ?? PHONE });
  const conn = await bot.waitConnection(bot.connections.length);
  return { provider, conn };
}

const notices = (conn: BotConnection, event: string) => conn.events.filter((e) => e.event === event);

describe('messaging webhooks', () => {
  const open: { close(): unknown }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });

  async function rigWithCall(env: Record<string, string> = {}, phone = PHONE) {
    const bot = await TestBot.start({ echo: false });
    const messaging = stubMessaging();
    const rig = await startBridge({ BOT_URL: bot.url, ...env }, messaging);
    open.push(bot, rig);
    const { provider, conn } = await liveCall(rig, bot, 'call-1', { phone });
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

  it('RCS: the send adopts the message id of the first event for its 10-digit mobile; an array of events', async () => {
    const { rig, conn, token, messaging } = await rigWithCall({}, RCS_PHONE);
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
      contacts: [{ mobile: RCS_MOBILE, params: { name: 'Ada' } }],
    });
    expect(messaging.campaigns[0]!.campaign_name).toMatch(/^call_call_1_\d+_[0-9a-f]{6}$/);

    const events = [
      rcsStatus('rcs-msg-1', 'sent', `+91${RCS_MOBILE}`),
      rcsStatus('rcs-msg-1', 'delivered', RCS_MOBILE),
      rcsButton('rcs-msg-1', RCS_MOBILE),
    ];
    expect((await post(rig.http, events)).body).toEqual({ received: 3, duplicates: 0 });
    const button = await conn.waitEvent('message_button');
    expect(button).toMatchObject({
      channel: 'rcs',
      message_id: 'rcs-msg-1',
      from: RCS_MOBILE,
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
      to: RCS_MOBILE,
      status: 'read',
    });
  });

  it("RCS: a second call's send to a number whose first send waits is 409, whatever its tenant; a tap of another message reaches no bot", async () => {
    const bot = await TestBot.start({ echo: false });
    const rig = await startBridge({ BOT_URL: bot.url }, stubMessaging());
    open.push(bot, rig);
    // Tenant B's media secret, so that a call of B's can be placed.
    const B_SECRET = 'tenant-b-media-secret';
    await rig.bridge.ctx.tenants.putMediaStream(
      { tenant: 'tenant-b', media_ws_url: 'wss://media.example/v1/media', channels: 1 },
      B_SECRET,
    );
    const a = await liveCall(rig, bot, 'call-a', { phone: RCS_PHONE });
    const b = await liveCall(rig, bot, 'call-b', { phone: RCS_PHONE, tenant: 'tenant-b', secret: B_SECRET });
    open.push(a.provider, b.provider);
    const tokenA = await restToken(['calls:control', 'messages:read']);
    const tokenB = await restToken(['calls:control', 'messages:read'], 'tenant-b');
    const send = (id: string, token: string) =>
      call(rig.http, 'POST', `/v1/sessions/${id}/message`, {
        token,
        body: { channel: 'rcs', template_name: 'order_update' },
      });
    expect((await send('call-a', tokenA)).status).toBe(200);
    const refused = await send('call-b', tokenB);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({
      error: 'conflict',
      message:
        'another RCS message to this caller is still waiting for its first delivery event (it names the message); try again shortly, or send chat',
    });
    // A tap of a message the bridge did not send to this number (A's send has had no first event):
    // held, never given to A's send, reaching neither bot.
    expect((await post(rig.http, rcsButton('rcs-b-msg', RCS_MOBILE))).body).toEqual({
      received: 1,
      duplicates: 0,
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(notices(a.conn, 'message_button')).toHaveLength(0);
    expect(notices(b.conn, 'message_button')).toHaveLength(0);
    // A's own first event names A's message; then B may send.
    await post(rig.http, rcsStatus('rcs-a-msg', 'sent', `+91${RCS_MOBILE}`));
    await a.conn.waitEvent('message_status', 5_000, (e) => e.message_id === 'rcs-a-msg');
    expect((await call(rig.http, 'GET', '/v1/messages/rcs-a-msg', { token: tokenA })).body).toMatchObject({
      session_id: 'call-a',
      kind: 'rcs_template',
    });
    expect((await call(rig.http, 'GET', '/v1/messages/rcs-a-msg', { token: tokenB })).status).toBe(404);
    expect((await call(rig.http, 'GET', '/v1/messages/rcs-b-msg', { token: tokenB })).status).toBe(404);
    expect((await send('call-b', tokenB)).status).toBe(200);
    expect(notices(b.conn, 'message_status')).toHaveLength(0);
  });

  it('an RCS launch that fails holds the number for nobody: the next send goes out', async () => {
    const { rig, token, messaging } = await rigWithCall({}, RCS_PHONE);
    const launch = messaging.launchRcsCampaign.bind(messaging);
    messaging.launchRcsCampaign = async () => {
      throw new BridgeError('upstream_unavailable', 'provider rcs launch failed');
    };
    const body = { channel: 'rcs', template_name: 'order_update' };
    const failed = await call(rig.http, 'POST', '/v1/sessions/call-1/message', { token, body });
    expect(failed.status).toBe(503);
    messaging.launchRcsCampaign = launch;
    const next = await call(rig.http, 'POST', '/v1/sessions/call-1/message', { token, body });
    expect(next.status).toBe(200);
    expect(messaging.campaigns).toHaveLength(1);
  });

  it('422 naming customer_phone for an RCS send to a number of another country; the number is not echoed', async () => {
    const { rig, token, messaging } = await rigWithCall({}, '+49 151 23456789');
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: { channel: 'rcs', template_name: 'order_update' },
    });
    expect(r.status).toBe(422);
    expect(r.body).toEqual({
      error: 'unusable_customer_phone',
      message:
        "the session's customer_phone (from its session_start) cannot take RCS: RCS goes to numbers with the country code 91 (MESSAGING_RCS_COUNTRY_CODE) and a 10-digit national number; this one has the country code 49 (chat takes any country)",
    });
    expect(JSON.stringify(r.body)).not.toMatch(/5123456789|23456789/);
    expect(messaging.campaigns).toHaveLength(0);
    // Chat takes it.
    const chat = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } },
    });
    expect(chat.status).toBe(200);
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

  it('400 naming what is wrong when the post cannot be read at all; nothing from it is counted', async () => {
    const rig = await startBridge();
    open.push(rig);
    const cases: [unknown, RegExp][] = [
      [{ hello: 'world' }, /must be a chat payload .* an RCS event .* or an array of RCS events/],
      [[], /empty array/],
      [{ object: 'chat', entry: {} }, /^entry must be an array, got a object$/],
      [{ object: 'email', entry: [] }, /^object must be "chat" \(a chat webhook payload\), got "email"$/],
      ['"just text"', /must be a chat payload .*got "just text"$/],
    ];
    for (const [body, message] of cases) {
      const r = await post(rig.http, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.message).toMatch(message);
    }
    // Not JSON at all.
    expect((await post(rig.http, '{"object": "chat", ')).status).toBe(400);
    // Over the bound of a post: refused whole, its events not counted.
    const tooMany = Array.from({ length: 1_001 }, (_, i) => rcsStatus(`m-many-${i}`, 'read'));
    const r = await post(rig.http, tooMany);
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/at most 1000 events/);
    expect((await post(rig.http, rcsStatus('m-many-0', 'read'))).body).toEqual({
      received: 1,
      duplicates: 0,
    });
  });

  it('a bad event in a readable post is skipped and reported; the others are taken', async () => {
    const rig = await startBridge();
    open.push(rig);
    const now = new Date().toISOString();
    // [post, first rejection, events taken, events skipped]
    const cases: [unknown, string, number, number][] = [
      [
        { ...rcsStatus('m-bad-1', 'sent'), status: 'bounced' },
        'status must be sent, delivered, read, failed, got "bounced"',
        0,
        1,
      ],
      [
        { ...rcsStatus('m-bad-2', 'sent'), event_type: 'opened' },
        'event_type must be delivery_status or button_click, got "opened"',
        0,
        1,
      ],
      [
        [rcsStatus('m-ok-3', 'sent'), { ...rcsStatus('m-bad-3', 'read'), timestamp: 'yesterday' }],
        '[1].timestamp must be an ISO 8601 timestamp, got "yesterday"',
        1,
        1,
      ],
      [[rcsStatus('m-ok-4', 'sent'), 'not an event'], '[1] must be an object, got "not an event"', 1, 1],
      [
        {
          object: 'chat',
          entry: [
            {
              changes: [
                {
                  field: 'messages',
                  value: {
                    statuses: [
                      { id: 'm-bad-5', status: 'sent' },
                      { id: 'm-ok-5', status: 'sent', timestamp: now, recipient_id: '14155550100' },
                    ],
                  },
                },
              ],
            },
          ],
        },
        'entry[0].changes[0].value.statuses[0].timestamp must be an ISO 8601 timestamp, got nothing',
        1,
        1,
      ],
      [
        {
          object: 'chat',
          entry: [
            'not an entry',
            {
              changes: [
                {
                  field: 'messages',
                  value: {
                    messages: [
                      {
                        id: 'x',
                        from: '1',
                        timestamp: now,
                        type: 'button',
                        button: { payload: 'p', text: 't' },
                      },
                    ],
                    statuses: [{ id: 'm-ok-6', status: 'read', timestamp: now, recipient_id: '1415555' }],
                  },
                },
              ],
            },
          ],
        },
        // The entry, and the tapped button without its context.
        'entry[0] must be an object, got "not an entry"',
        1,
        2,
      ],
    ];
    for (const [body, first, received, rejected] of cases) {
      const r = await post(rig.http, body);
      expect(r, JSON.stringify(body)).toEqual({
        status: 200,
        body: { received, duplicates: 0, rejected, first_rejection: first },
      });
    }
    // What was taken is recorded: posted again, a duplicate.
    expect((await post(rig.http, rcsStatus('m-ok-3', 'sent'))).body).toEqual({ received: 1, duplicates: 1 });
    // One unknown status in a batch of 1,000 costs that event only.
    const batch = Array.from({ length: 1_000 }, (_, i) => rcsStatus(`m-batch-k-${i}`, 'delivered'));
    batch[500] = { ...batch[500]!, status: 'opened' };
    const big = await post(rig.http, batch);
    expect(big).toEqual({
      status: 200,
      body: {
        received: 999,
        duplicates: 0,
        rejected: 1,
        first_rejection: '[500].status must be sent, delivered, read, failed, got "opened"',
      },
    });
    // Counted by outcome, the field only in the log.
    const metrics = await (await fetch(`${rig.http}/metrics`)).text();
    expect(metrics).toMatch(
      /voicebridge_messaging_webhook_events_total\{channel="rcs",outcome="rejected"\} 5/,
    );
    expect(rig.logs.join('\n')).toContain('"field":"[500].status"');
    expect(rig.logs.join('\n')).not.toContain('opened');
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
  });

  it('any body is 200 or a 400 with the contract body; a field made wrong is a 400 naming it in the envelope, a rejection naming it in an event', async () => {
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
    /** A path as the bridge names it: `entry[0].changes`, `[0].message_id`. */
    const fieldOf = (path: (string | number)[]) =>
      path.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? k : `.${k}`)).join('');
    const chat = chatStatuses('m-fuzz', 'sent');
    const tap = chatButton('m-fuzz', 'b1');
    const rcs = rcsStatus('m-fuzz', 'read');
    // Where a wrong value refuses the post (the envelope), and where it costs one event.
    const envelope: [unknown, (string | number)[]][] = [
      [chat, ['object']],
      [chat, ['entry']],
    ];
    const inside: [unknown, (string | number)[]][] = [
      [chat, ['entry', 0]],
      [chat, ['entry', 0, 'changes']],
      [chat, ['entry', 0, 'changes', 0, 'value']],
      [chat, ['entry', 0, 'changes', 0, 'value', 'statuses', 0, 'status']],
      [chat, ['entry', 0, 'changes', 0, 'value', 'statuses', 0, 'errors']],
      [chat, ['entry', 0, 'changes', 0, 'value', 'statuses', 0, 'id']],
      [tap, ['entry', 0, 'changes', 0, 'value', 'messages', 0, 'interactive']],
      [tap, ['entry', 0, 'changes', 0, 'value', 'messages', 0, 'context']],
      [tap, ['entry', 0, 'changes', 0, 'value', 'messages', 0, 'type']],
      [rcs, ['error']],
      [rcs, ['recipient']],
      [rcs, ['event_type']],
      [[rcs], [0, 'message_id']],
    ];
    const GENERIC = /^the webhook post must be a chat payload/;
    /** The post's answer names `field` (or a field inside it) first. */
    const names = (text: unknown, field: string) =>
      typeof text === 'string' &&
      text.startsWith(field) &&
      [' ', '.', '['].includes(text.charAt(field.length));
    const mutated = (paths: [unknown, (string | number)[]][]) =>
      fc.tuple(fc.constantFrom(...paths), wrong).map(([[v, path], value]) => ({
        body: setAt(v, path, value),
        field: fieldOf(path),
        value,
      }));
    const check = (r: { status: number; body: Record<string, unknown> }, what: string) => {
      expect([200, 400], what).toContain(r.status);
      if (r.status === 400) {
        expect(['bad_request', 'invalid_field'], what).toContain(r.body.error);
        expect(typeof r.body.message, what).toBe('string');
        return;
      }
      const keys = Object.keys(r.body).sort();
      if (r.body.rejected === undefined) expect(keys, what).toEqual(['duplicates', 'received']);
      else expect(keys, what).toEqual(['duplicates', 'first_rejection', 'received', 'rejected']);
    };
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue({ maxDepth: 4 }).map((body) => ({ kind: 'any' as const, body })),
          mutated(envelope).map((m) => ({ kind: 'envelope' as const, ...m })),
          mutated(inside).map((m) => ({ kind: 'inside' as const, ...m })),
        ),
        async (c) => {
          const text = JSON.stringify(c.body) ?? 'null';
          const r = await post(rig.http, text);
          check(r, text);
          if (c.kind === 'any') return;
          // A wrong value may happen to be a right one (or one the bridge skips, as an inbound text):
          // then nothing is refused. Else the refusal names the field.
          if (c.kind === 'envelope') {
            if (r.status === 200) return;
            if (c.value === undefined && c.field === 'object') expect(r.body.message, text).toMatch(GENERIC);
            else expect(names(r.body.message, c.field), `${text}: ${r.body.message}`).toBe(true);
            return;
          }
          // Without event_type the post is no RCS event: the envelope is unreadable.
          if (c.field === 'event_type' && c.value === undefined) {
            expect(r.status, text).toBe(400);
            expect(r.body.message, text).toMatch(GENERIC);
            return;
          }
          expect(r.status, text).toBe(200);
          if (r.body.rejected === undefined) return;
          expect(names(r.body.first_rejection, c.field), `${text}: ${r.body.first_rejection}`).toBe(true);
          // One event in the post: one rejection, unless the wrong value is a list of wrong things.
          if (!Array.isArray(c.value)) expect(r.body.rejected, text).toBe(1);
        },
      ),
      { numRuns: 400 },
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

  it('a store that fails answers 503 and marks nothing seen that it did not store: the retry is recorded', async () => {
    const { rig, conn, token } = await rigWithCall();
    const sent = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } },
    });
    const id = sent.body.message_id as string;
    // The store fails once, on the post's second event.
    const store = rig.bridge.ctx.messages;
    const addEvent = store.addEvent.bind(store);
    let calls = 0;
    store.addEvent = async (ev, recipient) => {
      if (++calls === 2) throw new Error('disk full');
      return addEvent(ev, recipient);
    };
    const first = await post(rig.http, chatStatuses(id, 'sent', 'delivered'));
    expect(first.status).toBe(503);
    expect(first.body).toEqual({
      error: 'store_unavailable',
      message:
        "the message store could not record 1 of the post's 2 events; post it again (the events recorded count as duplicates)",
    });
    // The event stored was forwarded; the other was not, and is not counted seen.
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'sent');
    const retry = await post(rig.http, chatStatuses(id, 'sent', 'delivered'));
    expect(retry).toEqual({ status: 200, body: { received: 2, duplicates: 1 } });
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'delivered');
    await new Promise((r) => setTimeout(r, 100));
    expect(notices(conn, 'message_status').map((e) => e.status)).toEqual(['sent', 'delivered']);
    const rec = await call(rig.http, 'GET', `/v1/messages/${encodeURIComponent(id)}`, { token });
    expect(rec.body).toMatchObject({ status: 'delivered' });
    expect((rec.body.events as unknown[]).length).toBe(2);
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

  it('a post while Redis is down is a 503; its retry once Redis is back is recorded, not a duplicate', async () => {
    redis = await useRedis({ own: true });
    const env = { STATE_STORE: redis.url, STATE_KEY_PREFIX: `mw-down-${process.pid}-${Date.now()}:` };
    const rig = await startBridge(env);
    open.push(rig);
    const body = rcsStatus('m-down', 'delivered');
    await redis.stop();
    const down = await post(rig.http, body);
    expect(down.status).toBe(503);
    expect(down.body.error).toBe('store_unavailable');
    await redis.restart();
    let again = await post(rig.http, body);
    for (let i = 0; i < 100 && again.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 50));
      again = await post(rig.http, body);
    }
    expect(again).toEqual({ status: 200, body: { received: 1, duplicates: 0 } });
    expect((await post(rig.http, body)).body).toEqual({ received: 1, duplicates: 1 });
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
