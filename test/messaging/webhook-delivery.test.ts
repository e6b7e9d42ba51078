/**
 * Webhook events reaching the ws bot of the call a message was sent in, on a real bridge over loopback:
 * chat statuses and taps, an RCS send that adopts its message id by its own first event (one waiting
 * send per number, 409 for another), a failed status's error, an event that comes while the bot is
 * being redialled, events of messages the bridge did not send (no bot), an event posted to another
 * instance (Redis), a post while Redis is down (503, its retry recorded), and `GET /v1/messages/{id}`
 * for the sending tenant only. The messaging provider is a stand-in client answering with fixed ids:
 * these tests post the provider's webhooks themselves.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BridgeError } from '../../src/errors.js';
import { call } from '../control/harness.js';
import { TestBot } from '../helpers/bot.js';
import {
  chatButton,
  chatStatuses,
  liveCall,
  notices,
  postWebhook,
  RCS_MOBILE,
  RCS_PHONE,
  rcsButton,
  rcsStatus,
  restToken,
  startWebhookBridge,
  stubMessaging,
  useWebhookRigs,
  WEBHOOK_SECRET,
} from '../helpers/messaging.js';
import { redisSkipReason, type TestRedis, useRedis } from '../helpers/redis.js';
import { quietFor, waitFor } from '../helpers/wait.js';

describe('messaging webhooks: events to the call bot', () => {
  const { open, rigWithCall } = useWebhookRigs();

  it('chat: statuses and a tapped button reach the call bot once; duplicates are counted, not forwarded', async () => {
    const { rig, conn, token } = await rigWithCall();
    const sent = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: { channel: 'chat', message: { type: 'text', text: { body: 'Your code is 1234' } } },
    });
    expect(sent.status).toBe(200);
    const id = sent.body.message_id as string;
    expect(sent.body).toEqual({ channel: 'chat', message_id: id, status: 'sent', session_id: 'call-1' });

    const first = await postWebhook(rig.http, chatStatuses(id, 'sent', 'delivered'));
    expect(first).toEqual({ status: 200, body: { received: 2, duplicates: 0 } });
    const tap = chatButton(id, 'yes');
    expect((await postWebhook(rig.http, tap)).body).toEqual({ received: 1, duplicates: 0 });
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
    expect((await postWebhook(rig.http, chatStatuses(id, 'sent', 'delivered'))).body).toEqual({
      received: 2,
      duplicates: 2,
    });
    expect((await postWebhook(rig.http, tap)).body).toEqual({ received: 1, duplicates: 1 });
    // A read after a delivered: new.
    expect((await postWebhook(rig.http, chatStatuses(id, 'read'))).body).toEqual({
      received: 1,
      duplicates: 0,
    });
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'read');
    await quietFor(100, 'a second copy of a status');
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
    expect(messaging.campaigns[0]!.campaign_name).toMatch(/^call_call_[a-z]{14}$/);

    const events = [
      rcsStatus('rcs-msg-1', 'sent', `+91${RCS_MOBILE}`),
      rcsStatus('rcs-msg-1', 'delivered', RCS_MOBILE),
      rcsButton('rcs-msg-1', RCS_MOBILE),
    ];
    expect((await postWebhook(rig.http, events)).body).toEqual({ received: 3, duplicates: 0 });
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
    expect((await postWebhook(rig.http, rcsStatus('rcs-msg-1', 'read'))).body).toEqual({
      received: 1,
      duplicates: 0,
    });
    expect((await postWebhook(rig.http, [rcsStatus('rcs-msg-1', 'read')])).body).toEqual({
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
    const rig = await startWebhookBridge({ BOT_URL: bot.url }, stubMessaging());
    open.push(bot, rig);
    // Tenant B's media secret, so that a call of B's can be placed.
    const B_SECRET = 'tenant-b-media-secret';
    await rig.bridge.ctx.tenants.putMediaStream(
      { tenant: 'tenant-b', media_ws_url: 'wss://media.example/v1/media', channels: 1 },
      B_SECRET,
    );
    const a = await liveCall(rig.http, bot, 'call-a', { phone: RCS_PHONE });
    const b = await liveCall(rig.http, bot, 'call-b', {
      phone: RCS_PHONE,
      tenant: 'tenant-b',
      secret: B_SECRET,
    });
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
    expect((await postWebhook(rig.http, rcsButton('rcs-b-msg', RCS_MOBILE))).body).toEqual({
      received: 1,
      duplicates: 0,
    });
    await quietFor(100, 'the tap at either bot');
    expect(notices(a.conn, 'message_button')).toHaveLength(0);
    expect(notices(b.conn, 'message_button')).toHaveLength(0);
    // A's own first event names A's message; then B may send.
    await postWebhook(rig.http, rcsStatus('rcs-a-msg', 'sent', `+91${RCS_MOBILE}`));
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

  it("a chat template goes as a campaign of one row; a failed status carries its error to the call's bot, and failed stays the status", async () => {
    const { rig, conn, token, messaging } = await rigWithCall();
    const sent = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: {
        channel: 'chat',
        template: { name: 'appointment_reminder', language: 'en_US', body_params: ['3pm'] },
      },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    // chat.md's template send: the campaign creator, one audience row with its BODY_n values.
    expect(messaging.sends).toEqual([]);
    expect(messaging.chatCampaigns).toHaveLength(1);
    expect(messaging.chatCampaigns[0]).toMatchObject({
      template_name: 'appointment_reminder',
      audience_rows: [{ phone: '14155550100', BODY_1: '3pm' }],
    });
    expect(messaging.chatCampaigns[0]!.campaign_name).toMatch(/^call_call_[a-z]{14}$/);
    expect(sent.body).toMatchObject({
      channel: 'chat',
      message_id: null,
      status: 'queued',
      campaign_id: 'chat-camp-1',
    });
    // The first event for the number names the message (a failed one, when nothing else came first).
    const id = 'wamid.tpl-1';
    const failed = chatStatuses(id, 'failed');
    const st = failed.entry[0]!.changes[0]!.value.statuses[0]! as Record<string, unknown>;
    st.errors = [{ code: 131026, title: 'Message undeliverable' }];
    await postWebhook(rig.http, failed);
    await postWebhook(rig.http, chatStatuses(id, 'delivered'));
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

  it('an event that comes while the bot is being redialled reaches it after its session_start', async () => {
    const bot = await TestBot.start({ echo: false });
    const port = Number(new URL(bot.url).port);
    const rig = await startWebhookBridge(
      { BOT_URL: bot.url, BOT_RETRY_BASE_MS: '100', BOT_RETRIES: '8' },
      stubMessaging(),
    );
    open.push(rig);
    const { provider } = await liveCall(rig.http, bot, 'call-r');
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
    expect((await postWebhook(rig.http, chatStatuses(id, 'delivered'))).body).toEqual({
      received: 1,
      duplicates: 0,
    });
    await quietFor(50, 'the event to go anywhere while the bot is away');
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
    expect((await postWebhook(rig.http, chatStatuses('unknown-msg', 'delivered'))).body).toEqual({
      received: 1,
      duplicates: 0,
    });
    await quietFor(100, 'the event at the bot');
    expect(notices(conn, 'message_status')).toHaveLength(0);
  });
});

const skip = redisSkipReason('messaging/webhook-delivery.test.ts');

describe.skipIf(skip !== undefined)('messaging webhooks with Redis', () => {
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
    const rig = await startWebhookBridge(env);
    open.push(rig);
    const body = rcsStatus('m-down', 'delivered');
    await redis.stop();
    const down = await postWebhook(rig.http, body);
    expect(down.status).toBe(503);
    expect(down.body.error).toBe('store_unavailable');
    await redis.restart();
    // Posted again until the store is back (the provider retries a 503 the same way).
    let again = await postWebhook(rig.http, body);
    await waitFor(
      async () => {
        if (again.status === 503) again = await postWebhook(rig.http, body);
        return again.status !== 503;
      },
      5_000,
      'the store to take the post again',
      50,
    );
    expect(again).toEqual({ status: 200, body: { received: 1, duplicates: 0 } });
    expect((await postWebhook(rig.http, body)).body).toEqual({ received: 1, duplicates: 1 });
  });

  it('an event posted to another instance reaches the bot of the call this one holds, counted once', async () => {
    redis = await useRedis();
    const env = { STATE_STORE: redis.url, STATE_KEY_PREFIX: `mw-${process.pid}-${Date.now()}:` };
    const bot = await TestBot.start({ echo: false });
    open.push(bot);
    const a = await startWebhookBridge({ ...env, BOT_URL: bot.url }, stubMessaging());
    open.push(a);
    const b = await startWebhookBridge({ ...env, BOT_URL: bot.url }, stubMessaging());
    open.push(b);
    const { provider, conn } = await liveCall(a.http, bot, 'call-x');
    open.push(provider);
    const token = await restToken(['calls:control', 'messages:read']);
    // Sent through instance b, which finds a's call in the shared registry.
    const send = () =>
      call(b.http, 'POST', '/v1/sessions/call-x/message', {
        token,
        body: { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } },
      });
    let sent = await send();
    await waitFor(
      async () => {
        if (sent.status === 404) sent = await send();
        return sent.status !== 404;
      },
      1_000,
      'instance b to find the call',
      20,
    );
    expect(sent.status).toBe(200);
    const id = sent.body.message_id as string;
    // Posted to b, which does not hold the call: published, and delivered by a.
    expect((await postWebhook(b.http, chatStatuses(id, 'delivered'))).body).toEqual({
      received: 1,
      duplicates: 0,
    });
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'delivered');
    expect((await postWebhook(a.http, chatStatuses(id, 'delivered'))).body).toEqual({
      received: 1,
      duplicates: 1,
    });
    // The same delivery reaching both instances at once: one counts it.
    const [x, y] = await Promise.all([
      postWebhook(b.http, chatStatuses(id, 'read')),
      postWebhook(a.http, chatStatuses(id, 'read')),
    ]);
    expect((x.body.duplicates as number) + (y.body.duplicates as number)).toBe(1);
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'read');
    await quietFor(100, 'a second copy of a status');
    expect(notices(conn, 'message_status').map((e) => e.status)).toEqual(['delivered', 'read']);
    const rec = await call(a.http, 'GET', `/v1/messages/${encodeURIComponent(id)}`, { token });
    expect(rec.body).toMatchObject({ status: 'read', session_id: 'call-x' });
  });
});
