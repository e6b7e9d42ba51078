/**
 * `POST /v1/sessions/{id}/message` on a real bridge whose messaging client talks to the real provider
 * emulator over loopback, with the emulator's webhooks posted back to the bridge: 400s naming the field,
 * 422 for a customer_phone that cannot be messaged, 404, 503 without a provider, sends whose events
 * reach the call's ws bot, and `npm start`'s in-process emulator. (Management and campaign records:
 * messaging-campaigns.test.ts.)
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Bridge } from '../../src/app.js';
import { mintToken } from '../../src/auth/jwt.js';
import { startupBanner } from '../../src/cli/banner.js';
import { loadConfig } from '../../src/config.js';
import { startInProcessProvider } from '../../src/emulator/in-process.js';
import { createLogger } from '../../src/log.js';
import { call } from '../control/harness.js';
import { TestBot } from '../helpers/bot.js';
import { TestProvider } from '../helpers/provider.js';
import { type InProcessRig, startRig as startTestRig } from '../helpers/rig.js';

const AUTH_SECRET = 'messaging-routes-auth-secret';
const MEDIA_SECRET = 'messaging-routes-media-secret';
const WEBHOOK_SECRET = 'messaging-routes-webhook-secret-42';
/** The customer's number as the provider gives it in session_start, and as chat takes it. */
const PHONE = '+14155550123';
const CHAT_TO = '14155550123';

/** The bridge's settings in these tests, its ws bot at `botUrl`. */
const bridgeEnv = (botUrl: string) => ({
  PORT: '0',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'silent',
  DSP_WORKERS: '0',
  AUTH_JWT_SECRET: AUTH_SECRET,
  MEDIA_SECRET,
  MESSAGING_WEBHOOK_SECRET: WEBHOOK_SECRET,
  BOT_URL: botUrl,
});

type Rig = InProcessRig & { readonly bot: TestBot };

/** The rig with a ws bot, this file's secrets and, unless `messaging: false`, the messaging emulator. */
async function startRig(
  o: { messaging?: boolean; env?: Record<string, string>; readDelayMs?: number } = {},
): Promise<Rig> {
  const { PORT: _p, HOST: _h, BOT_URL: _b, ...env } = bridgeEnv('');
  const rig = await startTestRig({
    env: { ...env, ...o.env },
    bot: { echo: false },
    ...(o.messaging === false
      ? {}
      : {
          providers: {
            messaging: { deliveryDelayMs: 20, readDelayMs: o.readDelayMs ?? 40, reviewDelayMs: 50 },
          },
        }),
  });
  rig.emulator?.messaging.setWebhook(`${rig.http}/v1/webhooks/messaging`, WEBHOOK_SECRET);
  return rig as Rig;
}

const restToken = (scopes: string[], tenant?: string) =>
  mintToken({ secret: AUTH_SECRET, scopes, ...(tenant !== undefined ? { tenant } : {}) });

async function liveCall(
  rig: { http: string; bot: TestBot },
  sessionId: string,
  phone: string | undefined = PHONE,
) {
  const provider = new TestProvider(`${rig.http.replace('http', 'ws')}/v1/media`, {
    token: await mintToken({ secret: MEDIA_SECRET, ttlSeconds: 600 }),
  });
  await provider.start(sessionId, { customer_phone: phone });
  const conn = await rig.bot.waitConnection(rig.bot.connections.length);
  return { provider, conn };
}

describe('POST /v1/sessions/{id}/message', () => {
  const open: { close(): unknown }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });

  async function rigWithCall(o: { messaging?: boolean; phone?: string; env?: Record<string, string> } = {}) {
    const rig = await startRig(o);
    open.push(rig);
    const { provider, conn } = await liveCall(rig, 'call-1', o.phone ?? PHONE);
    open.push(provider);
    return { rig, conn, token: await restToken(['calls:control', 'messages:read', 'messages:manage']) };
  }

  it('a chat text within the window: sent through the emulator, its delivered and read reach the bot', async () => {
    const { rig, conn, token } = await rigWithCall();
    rig.emulator!.messaging.inbound('default', CHAT_TO);
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: { channel: 'chat', message: { type: 'text', text: { body: 'Here is the link you asked for' } } },
    });
    expect(r.status).toBe(200);
    const id = r.body.message_id as string;
    expect(r.body).toEqual({ channel: 'chat', message_id: id, status: 'sent', session_id: 'call-1' });
    const delivered = await conn.waitEvent('message_status', 5_000, (e) => e.status === 'delivered');
    expect(delivered).toMatchObject({ channel: 'chat', message_id: id, recipient: CHAT_TO });
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'read');
    const rec = await call(rig.http, 'GET', `/v1/messages/${encodeURIComponent(id)}`, { token });
    expect(rec.body).toMatchObject({ status: 'read', to: CHAT_TO, kind: 'text', session_id: 'call-1' });
  });

  it('an interactive message: the tapped button reaches the bot with its id', async () => {
    const { rig, conn, token } = await rigWithCall();
    rig.emulator!.messaging.inbound('default', CHAT_TO);
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: {
        channel: 'chat',
        message: {
          type: 'interactive',
          interactive: {
            type: 'button',
            body: { text: 'Shall we call you back?' },
            action: { buttons: [{ type: 'reply', reply: { id: 'cb_yes', title: 'Yes' } }] },
          },
        },
      },
    });
    expect(r.status).toBe(200);
    const id = r.body.message_id as string;
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'delivered');
    rig.emulator!.messaging.tap(id, 'cb_yes');
    const tap = await conn.waitEvent('message_button');
    expect(tap).toMatchObject({ channel: 'chat', message_id: id, button_id: 'cb_yes', button_text: 'Yes' });
  });

  it('free-form chat outside the 24-hour window: the provider refusal passes through as window_closed', async () => {
    const { rig, token } = await rigWithCall();
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: { channel: 'chat', message: { type: 'text', text: { body: 'hello' } } },
    });
    expect(r.status).toBe(409);
    expect(r.body.error).toBe('window_closed');
  });

  it('RCS: launched to the 10-digit mobile; the message id comes with the first event, which reaches the bot', async () => {
    const { rig, conn, token } = await rigWithCall({ phone: '+91 98765-43210' });
    const tpl = await call(rig.http, 'POST', '/v1/messaging/rcs/templates', {
      token,
      body: {
        template_name: 'order_ready',
        template_type: 'text',
        bot_name: 'Shop',
        text: 'Hi {{name}}, ready',
      },
    });
    expect(tpl.status).toBe(201);
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: { channel: 'rcs', template_name: 'order_ready', params: { name: 'Ada' } },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ channel: 'rcs', status: 'queued', session_id: 'call-1' });
    expect(typeof r.body.campaign_id).toBe('string');
    const ev = await conn.waitEvent('message_status', 5_000, (e) => e.status === 'delivered');
    expect(ev.channel).toBe('rcs');
    const rec = await call(rig.http, 'GET', `/v1/messages/${encodeURIComponent(ev.message_id as string)}`, {
      token,
    });
    expect(rec.body).toMatchObject({
      campaign_id: r.body.campaign_id,
      to: '9876543210',
      kind: 'rcs_template',
    });
  });

  it("RCS: a send the store cannot record leaves the caller's number free for the next send", async () => {
    const { rig, token } = await rigWithCall({ phone: '+91 98765-43211' });
    const tpl = await call(rig.http, 'POST', '/v1/messaging/rcs/templates', {
      token,
      body: { template_name: 'order_ready', template_type: 'text', bot_name: 'Shop', text: 'Ready' },
    });
    expect(tpl.status).toBe(201);
    const spy = vi
      .spyOn(rig.bridge.ctx.messages, 'recordPendingRcs')
      .mockRejectedValueOnce(new Error('store away'));
    try {
      const body = { channel: 'rcs', template_name: 'order_ready' };
      const first = await call(rig.http, 'POST', '/v1/sessions/call-1/message', { token, body });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ channel: 'rcs', message_id: null, status: 'queued' });
      // Its message's first event may still come and take nothing; the number is not held.
      expect(await rig.bridge.ctx.messages.reserveRcs('9876543211')).toEqual(expect.any(String));
    } finally {
      spy.mockRestore();
    }
  });

  it('400 naming the field', async () => {
    const { rig, token } = await rigWithCall();
    const cases: [unknown, RegExp][] = [
      [{}, /^channel must be "chat" or "rcs", got nothing$/],
      [{ channel: 'sms' }, /^channel must be "chat" or "rcs", got "sms"$/],
      [{ channel: 'chat' }, /^template or message is required on chat/],
      [{ channel: 'chat', template_name: 'x' }, /^template_name must be left out on chat/],
      [
        { channel: 'chat', template: { name: 'a', language: 'en_US' }, message: { type: 'text' } },
        /^give template or message on chat, not both$/,
      ],
      [{ channel: 'rcs' }, /^template_name is required on rcs/],
      [{ channel: 'rcs', template_name: 'x', message: {} }, /^message must be left out on rcs/],
      [{ channel: 'rcs', template_name: 'x', params: { a: 1 } }, /^params must be .*strings/],
      [{ channel: 'chat', message: { type: 'video' } }, /message\.type/],
      [{ channel: 'chat', message: { type: 'text', text: {} } }, /message\.text\.body/],
      [{ channel: 'chat', template: { name: 'Bad-Name', language: 'en_US' } }, /^template\.name must be/],
      [{ channel: 'chat', template: { name: 'ok_name', language: 'en' } }, /^template\.language must be/],
      [{ channel: 'chat', tempalte: {} }, /^unknown field "tempalte"/],
    ];
    for (const [body, message] of cases) {
      const r = await call(rig.http, 'POST', '/v1/sessions/call-1/message', { token, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.message, JSON.stringify(body)).toMatch(message);
    }
  });

  it('any body is answered with the contract error body and a fitting status, never a 500', async () => {
    const { rig, token } = await rigWithCall({ env: { REST_RATE_LIMIT: '1000000' } });
    rig.emulator!.messaging.inbound('default', CHAT_TO);
    const wrong = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.string({ unit: 'grapheme', maxLength: 30 }),
      fc.constant(undefined),
    );
    const body = fc.oneof(
      fc.jsonValue({ maxDepth: 4 }),
      fc.record(
        {
          channel: fc.oneof(fc.constantFrom('chat', 'rcs'), wrong),
          template: fc.oneof(
            wrong,
            fc.record({
              name: fc.oneof(fc.constant('a_b'), wrong),
              language: fc.oneof(fc.constant('en_US'), wrong),
            }),
          ),
          message: fc.oneof(
            wrong,
            fc.record({
              type: fc.oneof(fc.constantFrom('text', 'image', 'interactive'), wrong),
              text: wrong,
            }),
          ),
          template_name: wrong,
          params: wrong,
        },
        { requiredKeys: ['channel'] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const r = await call(rig.http, 'POST', '/v1/sessions/call-1/message', { token, body: b });
        expect([200, 400, 404, 409, 422], JSON.stringify(b)).toContain(r.status);
        if (r.status !== 200) {
          expect(typeof r.body.error).toBe('string');
          expect(typeof r.body.message).toBe('string');
        }
      }),
      { numRuns: 200 },
    );
  });

  it("422 unusable_customer_phone when the call's number cannot be messaged: it came from session_start, not the request", async () => {
    const { rig, token } = await rigWithCall({ phone: '5550100' });
    for (const body of [
      { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } },
      { channel: 'rcs', template_name: 'x' },
    ]) {
      const r = await call(rig.http, 'POST', '/v1/sessions/call-1/message', { token, body });
      expect(r.status).toBe(422);
      expect(r.body).toEqual({
        error: 'unusable_customer_phone',
        message:
          'the session\'s customer_phone (from its session_start) has 5 digits after the country code 55: too few (is the country code missing?); a chat or RCS message needs the customer\'s number in E.164: its country code, then the national number ("+", spaces, dashes, dots and brackets allowed)',
      });
      expect(r.body.message).not.toContain('5550100');
    }
    // A US number takes chat, not RCS (MESSAGING_RCS_COUNTRY_CODE is 91 unless set).
    const us = await rigWithCall({ phone: '+1 (415) 555-0123' });
    const rcs = await call(us.rig.http, 'POST', '/v1/sessions/call-1/message', {
      token: us.token,
      body: { channel: 'rcs', template_name: 'x' },
    });
    expect(rcs.status).toBe(422);
    expect(rcs.body.message).toMatch(
      /^the session's customer_phone \(from its session_start\) cannot take RCS: RCS goes to numbers with the country code 91 \(MESSAGING_RCS_COUNTRY_CODE\) and a 10-digit national number; this one has the country code 1 /,
    );
    expect(rcs.body.message).not.toMatch(/4155550123|555/);
    // With MESSAGING_RCS_COUNTRY_CODE=1 it does: a 10-digit national number of that country.
    const set = await rigWithCall({ env: { MESSAGING_RCS_COUNTRY_CODE: '1' }, phone: '+1 (415) 555-0123' });
    const tpl = await call(set.rig.http, 'POST', '/v1/messaging/rcs/templates', {
      token: set.token,
      body: { template_name: 'order_ready', template_type: 'text', bot_name: 'Shop', text: 'Ready' },
    });
    expect(tpl.status).toBe(201);
    const ok = await call(set.rig.http, 'POST', '/v1/sessions/call-1/message', {
      token: set.token,
      body: { channel: 'rcs', template_name: 'order_ready' },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const ev = await set.conn.waitEvent('message_status', 5_000, (e) => e.status === 'sent');
    expect(ev.recipient).toMatch(/4155550123$/);
  });

  it('404 for a session this bridge does not hold for the token tenant; 401 and 403 without a good token', async () => {
    const { rig, token } = await rigWithCall();
    const body = { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } };
    const r = await call(rig.http, 'POST', '/v1/sessions/nobody/message', { token, body });
    expect(r.status).toBe(404);
    expect(r.body.message).toMatch(/nobody/);
    const other = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token: await restToken(['calls:control'], 'acme'),
      body,
    });
    expect(other.status).toBe(404);
    expect((await call(rig.http, 'POST', '/v1/sessions/call-1/message', { body })).status).toBe(401);
    const noScope = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token: await restToken(['messages:read']),
      body,
    });
    expect(noScope.status).toBe(403);
  });

  it('503 when no messaging provider is configured, naming what to set', async () => {
    const { rig, token } = await rigWithCall({ messaging: false });
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } },
    });
    expect(r.status).toBe(503);
    expect(r.body).toEqual({
      error: 'upstream_unavailable',
      message: 'no messaging provider is configured: set MESSAGING_BASE_URL and MESSAGING_TOKEN',
    });
    const list = await call(rig.http, 'GET', '/v1/messaging/chat/templates', { token });
    expect(list.status).toBe(503);
    // A bad body is a 400 first, then an unknown session a 404, provider or not.
    const bad = await call(rig.http, 'POST', '/v1/sessions/nobody/message', {
      token,
      body: { channel: 'chat', message: { type: 'video' } },
    });
    expect(bad.status).toBe(400);
    const missing = await call(rig.http, 'POST', '/v1/sessions/nobody/message', {
      token,
      body: { channel: 'rcs', template_name: 'order_ready' },
    });
    expect(missing.status).toBe(404);
  });
});

describe('npm start without MESSAGING_BASE_URL: the in-process emulator serves messaging', () => {
  const open: { close(): unknown }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });

  it('the client points at the emulator, its webhooks come back to the bridge with the secret as a bearer token, the bot hears', async () => {
    const bot = await TestBot.start({ echo: false });
    open.push(bot);
    const base = loadConfig(bridgeEnv(bot.url));
    let bridge: Bridge | undefined;
    const inProcess = await startInProcessProvider(base, createLogger('silent'), async (tenant, id) =>
      bridge?.ctx.sessions.get(tenant, id),
    );
    open.push(inProcess.emulator);
    expect(inProcess).toMatchObject({ voice: true, messaging: true });
    expect(inProcess.config.messagingBaseUrl).toBe(`${inProcess.url}/v1`);
    // The development start's config, as `npm start` would run with it.
    const rig = await startTestRig({ config: inProcess.config });
    open.push(rig);
    bridge = rig.bridge;
    const http = rig.http;
    expect(inProcess.connectWebhooks(http)).toBe(`${http}/v1/webhooks/messaging`);
    // The secret goes as a bearer token: the emulator's unauthenticated control API never shows it.
    expect(inProcess.emulator.messaging.webhookUrl).toBe(`${http}/v1/webhooks/messaging`);
    const shown = await call(inProcess.url, 'GET', '/emulator/messaging/webhook');
    expect(shown.status).toBe(200);
    expect(shown.body).toEqual({ url: `${http}/v1/webhooks/messaging`, token_set: true });
    expect(shown.text).not.toContain(WEBHOOK_SECRET);

    const banner = startupBanner(http, inProcess.config);
    expect(banner).toContain(`messaging: ${inProcess.url}/v1`);
    expect(banner).toContain(
      `webhook: ${http}/v1/webhooks/messaging with "Authorization: Bearer <MESSAGING_WEBHOOK_SECRET>"`,
    );
    expect(banner).not.toContain(WEBHOOK_SECRET);

    const { provider, conn } = await liveCall({ http, bot }, 'dev-call');
    open.push(provider);
    inProcess.emulator.messaging.inbound('default', CHAT_TO);
    const r = await call(http, 'POST', '/v1/sessions/dev-call/message', {
      token: await restToken(['calls:control']),
      body: { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } },
    });
    expect(r.status).toBe(200);
    await conn.waitEvent(
      'message_status',
      5_000,
      (e) => e.status === 'delivered' && e.message_id === r.body.message_id,
    );
  });

  it('the banner says when messaging is not configured, and when webhooks need no token', () => {
    expect(startupBanner('http://127.0.0.1:9000', loadConfig({}))).toContain(
      'messaging: not configured (MESSAGING_BASE_URL): the message routes answer 503',
    );
    const open = startupBanner(
      'http://0.0.0.0:9000',
      loadConfig({
        MESSAGING_BASE_URL: 'https://m-user:pw-x@messaging.example/v1?k=1',
        MESSAGING_TOKEN: 't',
      }),
    );
    expect(open).toContain('messaging: https://messaging.example/v1');
    expect(open).toContain(
      'webhook: http://127.0.0.1:9000/v1/webhooks/messaging (no token: MESSAGING_WEBHOOK_SECRET is not set',
    );
    expect(open).not.toMatch(/m-user|pw-x/);
  });
});
