import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { ChatWebhookPayload } from '../../src/emulator/messaging/wire.js';
import { call } from '../helpers/http-call.js';
import { useMessagingEmulator } from '../helpers/messaging-emulator.js';
import { waitFor } from '../helpers/wait.js';
import { maxInWindow } from '../helpers/window.js';

const SECRET = 'messaging-sender-secret';
const CUSTOMER = '14155550142';
const HOUR = 3600 * 1000;

const rig = useMessagingEmulator(SECRET, { reviewDelayMs: -1 });
const start = rig.start;

/** A webhook receiver on 127.0.0.1 that keeps every post's body, query token and Authorization. */
async function startReceiver(): Promise<{
  url: string;
  posts: { body: ChatWebhookPayload; token: unknown; authorization: string | undefined }[];
}> {
  const posts: { body: ChatWebhookPayload; token: unknown; authorization: string | undefined }[] = [];
  const app = Fastify();
  app.post('/hook', async (req) => {
    posts.push({
      body: req.body as ChatWebhookPayload,
      token: (req.query as { token?: string }).token,
      authorization: req.headers.authorization,
    });
    return { ok: true };
  });
  const url = await rig.listen(app, '/hook');
  return { url, posts };
}

const text = (to = CUSTOMER) => ({ to, message: { type: 'text', text: { body: 'hello' } } });

const approvedTemplate = (url: string, key: string, name: string) =>
  rig.approvedChatTemplate(url, key, {
    name,
    category: 'UTILITY',
    language: 'en_US',
    components: [
      { type: 'BODY', text: 'Hi {{1}}, your code is {{2}}' },
      { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'Stop' }] },
    ],
    sample_values: { '1': 'Ann', '2': '1234' },
  });

const statuses = (posts: { body: ChatWebhookPayload }[], id: string) =>
  posts.flatMap((p) => p.body.entry[0]!.changes[0]!.value.statuses ?? []).filter((s) => s.id === id);

describe('messaging emulator: POST /chat_message_sender', () => {
  it('answers the documented shape; webhooks post sent, delivered and read in order', async () => {
    const hook = await startReceiver();
    const { url, key } = await start({ webhookUrl: `${hook.url}?token=hook-secret` });
    rig.emu!.messaging.inbound('default', CUSTOMER, 'hi there');
    const r = await call(url, 'POST', '/v1/chat_message_sender', { token: key, body: text() });
    expect(r.status).toBe(200);
    const data = r.body.data as { message_id: string; wa_id: string; status: string };
    expect(data.message_id).toMatch(/^wamid\.[A-Za-z0-9_-]+$/);
    expect(data).toMatchObject({ wa_id: CUSTOMER, status: 'sent' });
    expect(r.body.success).toBe(true);
    expect(Number.isInteger((r.body.performance as { total_time_ms: number }).total_time_ms)).toBe(true);

    await waitFor(() => statuses(hook.posts, data.message_id).length === 3, 3_000, 'three statuses');
    expect(statuses(hook.posts, data.message_id).map((s) => s.status)).toEqual(['sent', 'delivered', 'read']);
    expect(hook.posts.every((p) => p.token === 'hook-secret')).toBe(true);
    // The inbound message was posted too, as a chat inbound text.
    const inbound = hook.posts.flatMap((p) => p.body.entry[0]!.changes[0]!.value.messages ?? []);
    expect(inbound).toEqual([
      expect.objectContaining({ from: CUSTOMER, type: 'text', text: { body: 'hi there' } }),
    ]);
    expect(hook.posts[0]!.body.object).toBe('chat');
  });

  it('webhook token: posted as a bearer token, never shown; a ?token= in the URL is shown masked', async () => {
    const hook = await startReceiver();
    const { url, key } = await start({
      webhookUrl: `${hook.url}?token=url-secret&v=2`,
      webhookToken: 'tok-1',
    });
    const shown = await call(url, 'GET', '/emulator/messaging/webhook');
    expect(shown.body).toEqual({ url: `${hook.url}?token=****&v=2`, token_set: true });
    rig.emu!.messaging.inbound('default', CUSTOMER, 'hi');
    await waitFor(() => hook.posts.length === 1, 3_000, 'the inbound posted');
    expect(hook.posts[0]).toMatchObject({ authorization: 'Bearer tok-1', token: 'url-secret' });

    // Through the control API: URL and token together; the answer shows neither secret.
    const put = await call(url, 'PUT', '/emulator/messaging/webhook', {
      body: { url: hook.url, token: 'tok-2' },
    });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ url: hook.url, token_set: true });
    const sent = await call(url, 'POST', '/v1/chat_message_sender', { token: key, body: text() });
    const id = (sent.body.data as { message_id: string }).message_id;
    await waitFor(() => statuses(hook.posts, id).length === 3, 3_000, 'three statuses');
    expect(
      hook.posts.slice(1).every((p) => p.authorization === 'Bearer tok-2' && p.token === undefined),
    ).toBe(true);
    for (const r of [shown, put, await call(url, 'GET', '/emulator/messaging/webhook')]) {
      expect(JSON.stringify(r.body)).not.toMatch(/tok-1|tok-2|url-secret/);
    }

    // A PUT without a token clears it; a token with a space is refused.
    await call(url, 'PUT', '/emulator/messaging/webhook', { body: { url: hook.url } });
    expect((await call(url, 'GET', '/emulator/messaging/webhook')).body).toEqual({
      url: hook.url,
      token_set: false,
    });
    const bad = await call(url, 'PUT', '/emulator/messaging/webhook', {
      body: { url: hook.url, token: 'a b' },
    });
    expect(bad.status).toBe(400);

    // The same as a method.
    rig.emu!.messaging.setWebhook(`${hook.url}?token=x`, 'tok-3');
    expect(rig.emu!.messaging.webhookView).toEqual({ url: `${hook.url}?token=****`, token_set: true });
    rig.emu!.messaging.setWebhook(undefined);
    expect(rig.emu!.messaging.webhookView).toEqual({ url: null, token_set: false });
  });

  it('the 24-hour window: free-form refused with 131047 after 24 h; a template (a campaign of one, never the sender: 100) is fine; inbound reopens', async () => {
    const { url, key } = await start();
    await approvedTemplate(url, key, 'login_code');
    const send = (body: unknown) => call(url, 'POST', '/v1/chat_message_sender', { token: key, body });

    const never = await send(text());
    expect(never.status).toBe(400);
    expect(never.body.error_data).toMatchObject({ code: 131047 });
    expect(never.body.error).toMatch(/^Re-engagement required/);

    rig.emu!.messaging.inbound('default', CUSTOMER, 'old', 25 * HOUR);
    const stale = await send(text());
    expect(stale.status).toBe(400);
    expect(stale.body.error_data).toMatchObject({ code: 131047 });
    for (const message of [
      { type: 'image', image: { link: 'https://example.com/a.png' } },
      {
        type: 'interactive',
        interactive: {
          type: 'button',
          body: { text: 'Pick' },
          action: { buttons: [{ type: 'reply', reply: { id: 'yes', title: 'Yes' } }] },
        },
      },
    ]) {
      expect((await send({ to: CUSTOMER, message })).body.error_data).toMatchObject({ code: 131047 });
    }

    // chat.md lists text, image, document and interactive for the sender: a template there is an
    // invalid parameter (100), as a provider enforcing the document answers.
    const onSender = await send({
      to: CUSTOMER,
      message: {
        type: 'template',
        template: { name: 'login_code', language: 'en_US', body_params: ['Ann', '42'] },
      },
    });
    expect(onSender.status).toBe(400);
    expect(onSender.body.error_data).toMatchObject({ code: 100 });
    expect(onSender.body.error).toMatch(/message\.type must be one of text, image, document, interactive/);

    // A template to one number: the campaign creator with one audience row and its BODY_n values. The
    // window does not apply; the message id comes from the send (and its webhook events).
    const campaign = (name: string, row: Record<string, string>, template = 'login_code') =>
      call(url, 'POST', '/v1/chat_campaign_creator', {
        token: key,
        body: { campaign_name: name, template_name: template, audience_rows: [{ phone: CUSTOMER, ...row }] },
      });
    const tpl = await campaign('login_for_ann', { BODY_1: 'Ann', BODY_2: '42' });
    expect(tpl.status, JSON.stringify(tpl.body)).toBe(200);
    const campaignId = (tpl.body.campaign as { id: string }).id;
    let tplId = '';
    await waitFor(
      () => {
        tplId =
          rig.emu!.messaging.stats('default').sends.find((s) => s.campaign_id === campaignId)?.message_id ??
          '';
        return tplId !== '';
      },
      2_000,
      'the campaign of one sent',
    );
    expect(rig.emu!.messaging.state.messages.get(tplId)?.message).toEqual({
      type: 'template',
      template: { name: 'login_code', body_params: ['Ann', '42'] },
    });
    // A tap on the template's QUICK_REPLY button is an inbound `button` message with the button's text.
    const tap = await call(url, 'POST', '/emulator/messaging/tap', {
      body: { message_id: tplId, button_id: 'Stop' },
    });
    expect(tap.status).toBe(200);
    const tapped = (tap.body.posted as ChatWebhookPayload).entry[0]!.changes[0]!.value.messages![0]!;
    expect(tapped).toMatchObject({
      from: CUSTOMER,
      type: 'button',
      button: { payload: 'Stop', text: 'Stop' },
      context: { id: tplId },
    });
    // The reply opened the window again: free-form is fine now; back-date it for the checks below.
    expect((await send(text())).status).toBe(200);
    rig.emu!.messaging.state.accounts.get('default')!.lastInbound.set(CUSTOMER, Date.now() - 25 * HOUR);
    expect((await send(text())).status).toBe(400);
    const wrongCount = await campaign('login_short', { BODY_1: 'Ann' });
    expect(wrongCount.status).toBe(400);
    expect(wrongCount.body.error).toMatch(/BODY_2 is required/);
    const beyond = await campaign('login_long', { BODY_1: 'Ann', BODY_2: '42', BODY_3: 'x' });
    expect(beyond.status).toBe(400);
    expect((await campaign('login_none', {}, 'no_such')).status).toBe(404);

    // Inbound 23 h ago: still open.
    const control = await call(url, 'POST', '/emulator/messaging/accounts/default/inbound', {
      body: { from: CUSTOMER, text: 'again', ageMs: 23 * HOUR },
    });
    expect(control.status).toBe(200);
    expect((await send(text())).status).toBe(200);
    // A bad phone is a 400 from validation.
    const badPhone = await send(text('+14155550142'));
    expect(badPhone.status).toBe(400);
    expect(badPhone.body.success).toBe(false);
  });

  it('80 requests per second per account: a burst of 200 sees 130429 past the 80th', async () => {
    const { url, key } = await start();
    rig.emu!.messaging.inbound('default', CUSTOMER);
    const started = performance.now();
    // All 200 at once: far faster than 80 per second, however slow the machine.
    const answers = await Promise.all(
      Array.from({ length: 200 }, () =>
        call(url, 'POST', '/v1/chat_message_sender', { token: key, body: text() }),
      ),
    );
    const spanMs = performance.now() - started;
    const ok = answers.filter((a) => a.status === 200);
    const limited = answers.filter((a) => a.status === 429);
    expect(ok.length + limited.length).toBe(200);
    for (const a of limited) expect(a.body.error_data).toMatchObject({ code: 130429 });
    expect(limited.length).toBeGreaterThanOrEqual(1);
    // The sends the emulator admitted, at their admission times (each send is recorded at the time its
    // sliding window counted): no rolling second holds more than 80, however long the burst took.
    const admitted = rig.emu!.messaging.stats('default').sends.map((r) => r.at);
    expect(admitted).toHaveLength(ok.length);
    expect(maxInWindow(admitted, 1_000)).toBeLessThanOrEqual(80);
    // Arriving within `spanMs`, at most 80 per started second of it were admitted.
    expect(ok.length).toBeLessThanOrEqual(80 * (Math.floor(spanMs / 1_000) + 1));
    // Another account is not affected.
    const ws = rig.emu!.messaging.createWorkspace(1);
    rig.emu!.messaging.inbound(ws.accounts[0]!.account_id, CUSTOMER);
    expect(
      (await call(url, 'POST', '/v1/chat_message_sender', { token: ws.api_key, body: text() })).status,
    ).toBe(200);
  });

  it('tier limit per 24 h (429 with 133000) and credits (402), campaign sends counted too', async () => {
    const { url } = await start();
    const ws = rig.emu!.messaging.createWorkspace(1);
    const id = ws.accounts[0]!.account_id;
    rig.emu!.messaging.inbound(id, CUSTOMER);
    const send = () => call(url, 'POST', '/v1/chat_message_sender', { token: ws.api_key, body: text() });

    const patched = await call(url, 'PATCH', `/emulator/messaging/accounts/${id}`, { body: { credits: 3 } });
    expect(patched.body).toMatchObject({ account_id: id, credits: 3, tier: 3 });
    for (let i = 0; i < 3; i++) expect((await send()).status).toBe(200);
    const broke = await send();
    expect(broke.status).toBe(402);
    expect(broke.body.success).toBe(false);
    expect(rig.emu!.messaging.accountView(id).credits).toBe(0);

    rig.emu!.messaging.setAccount(id, { credits: null, tier: 1 });
    // Tier 1 allows 1,000 per 24 h: 3 are used; fill the log to 999, then one more passes and the next fails.
    const a = rig.emu!.messaging.state.accounts.get(id)!;
    const now = Date.now();
    for (let i = 0; i < 996; i++) a.dayLog.push(now);
    expect((await send()).status).toBe(200);
    const over = await send();
    expect(over.status).toBe(429);
    expect(over.body.error_data).toMatchObject({ code: 133000 });
    expect(over.body.error).toMatch(/tier/);
    expect(
      (await call(url, 'PATCH', `/emulator/messaging/accounts/${id}`, { body: { tier: 5 } })).status,
    ).toBe(400);
    rig.emu!.messaging.setAccount(id, { tier: 4 });
    expect((await send()).status).toBe(200);
  });

  it('undeliverable numbers get sent then failed with 131026; a reply button tap posts button_reply', async () => {
    const hook = await startReceiver();
    const { url, key } = await start({ webhookUrl: hook.url, readDelayMs: -1, deliveryDelayMs: 20 });
    const BAD = '14155550999';
    expect(
      (await call(url, 'POST', '/emulator/messaging/undeliverable', { body: { numbers: [BAD] } })).body,
    ).toEqual({ undeliverable: [BAD] });
    rig.emu!.messaging.inbound('default', BAD);
    rig.emu!.messaging.inbound('default', CUSTOMER);
    const bad = await call(url, 'POST', '/v1/chat_message_sender', { token: key, body: text(BAD) });
    expect(bad.status).toBe(200);
    const badId = (bad.body.data as { message_id: string }).message_id;
    await waitFor(() => statuses(hook.posts, badId).length === 2, 3_000, 'sent and failed');
    const failed = statuses(hook.posts, badId);
    expect(failed.map((s) => s.status)).toEqual(['sent', 'failed']);
    expect(failed[1]!.errors).toEqual([{ code: 131026, title: 'Message undeliverable' }]);

    const inter = await call(url, 'POST', '/v1/chat_message_sender', {
      token: key,
      body: {
        to: CUSTOMER,
        message: {
          type: 'interactive',
          interactive: {
            type: 'button',
            body: { text: 'Keep the appointment?' },
            action: {
              buttons: [
                { type: 'reply', reply: { id: 'keep', title: 'Keep' } },
                { type: 'reply', reply: { id: 'move', title: 'Move' } },
              ],
            },
          },
        },
      },
    });
    const interId = (inter.body.data as { message_id: string }).message_id;
    await waitFor(() => statuses(hook.posts, interId).length === 2, 3_000, 'sent and delivered, no read');
    const tap = await call(url, 'POST', '/emulator/messaging/tap', {
      body: { message_id: interId, button_id: 'move' },
    });
    expect(tap.status).toBe(200);
    await waitFor(
      () => hook.posts.some((p) => p.body.entry[0]!.changes[0]!.value.messages?.[0]?.context?.id === interId),
      3_000,
      'the button reply',
    );
    const reply = hook.posts
      .flatMap((p) => p.body.entry[0]!.changes[0]!.value.messages ?? [])
      .find((m) => m.context?.id === interId)!;
    expect(reply).toMatchObject({
      from: CUSTOMER,
      type: 'interactive',
      interactive: { type: 'button_reply', button_reply: { id: 'move', title: 'Move' } },
      context: { id: interId },
    });
    expect(
      (
        await call(url, 'POST', '/emulator/messaging/tap', {
          body: { message_id: interId, button_id: 'nope' },
        })
      ).status,
    ).toBe(400);
    // Read receipts are off: no read status ever came.
    expect(statuses(hook.posts, interId).map((s) => s.status)).toEqual(['sent', 'delivered']);
  });
});
