import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { ChatStatusItem, ChatWebhookPayload } from '../../src/emulator/messaging/wire.js';
import { call } from '../helpers/http-call.js';
import { useMessagingEmulator } from '../helpers/messaging-emulator.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const SECRET = 'messaging-campaigns-secret';

const rig = useMessagingEmulator(SECRET, { reviewDelayMs: -1 });
const start = rig.start;

interface Receiver {
  readonly url: string;
  /** Status items of the posts answered 200. */
  readonly accepted: ChatStatusItem[];
  /** Attempts per post body. */
  readonly attempts: Map<string, number>;
  /** TCP connections the emulator opened to the receiver. */
  readonly connections: () => number;
}

/** A webhook receiver on 127.0.0.1 answering `answer(n)` to the n-th attempt of each distinct post. */
async function startReceiver(answer: (n: number) => number = () => 200): Promise<Receiver> {
  const accepted: ChatStatusItem[] = [];
  const attempts = new Map<string, number>();
  const app = Fastify();
  app.post('/hook', async (req, reply) => {
    const key = JSON.stringify(req.body);
    const n = (attempts.get(key) ?? 0) + 1;
    attempts.set(key, n);
    const code = answer(n);
    if (code === 200) {
      for (const s of (req.body as ChatWebhookPayload).entry[0]!.changes[0]!.value.statuses ?? [])
        accepted.push(s);
    }
    return reply.code(code).send({ n });
  });
  let connections = 0;
  app.server.on('connection', () => {
    connections++;
  });
  const url = await rig.listen(app, '/hook');
  return { url, accepted, attempts, connections: () => connections };
}

const approvedTemplate = (url: string, key: string, name: string) =>
  rig.approvedChatTemplate(url, key, {
    name,
    category: 'MARKETING',
    language: 'en_US',
    components: [{ type: 'BODY', text: 'Hi {{1}}, {{2}} is on sale' }],
    sample_values: { '1': 'Ann', '2': 'tea' },
  });

const phone = (i: number) => `1415555${String(i).padStart(4, '0')}`;
const rows = (n: number) =>
  Array.from({ length: n }, (_v, i) => ({ phone: phone(i), BODY_1: `name${i}`, BODY_2: `item${i}` }));

describe('messaging emulator: POST /chat_campaign_creator', () => {
  it('300 recipients: each sent exactly once with its own BODY values, at most 80 in any second, all delivered', async () => {
    const hook = await startReceiver();
    const { url, key } = await start({ webhookUrl: hook.url, readDelayMs: -1, deliveryDelayMs: 50 });
    await approvedTemplate(url, key, 'spring_sale');
    const r = await call(url, 'POST', '/v1/chat_campaign_creator', {
      token: key,
      body: { campaign_name: 'spring_run', template_name: 'spring_sale', audience_rows: rows(300) },
    });
    expect(r.status).toBe(200);
    const campaign = r.body.campaign as Record<string, unknown>;
    expect(campaign).toMatchObject({
      campaign_name: 'spring_run',
      template_name: 'spring_sale',
      status: 'launched',
      total_recipients: 300,
    });
    expect(campaign.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(campaign.queued_at).toMatch(/Z$/);

    // The template is in use while the campaign fans out: delete is refused.
    const del = await call(url, 'POST', '/v1/chat_template_manager', {
      token: key,
      body: { action: 'delete', templateName: 'spring_sale' },
    });
    expect(del.status).toBe(409);
    expect(del.body.error).toMatch(/active campaign spring_run/);

    await waitFor(
      () => hook.accepted.filter((s) => s.status === 'delivered').length === 300,
      15_000,
      '300 delivered statuses',
      20,
    );
    const sends = rig.emu!.messaging.stats('default').sends.filter((s) => s.campaign_id === campaign.id);
    expect(sends).toHaveLength(300);
    expect(new Set(sends.map((s) => s.to)).size).toBe(300);
    expect(new Set(sends.map((s) => s.message_id)).size).toBe(300);
    // At most 80 in any 1-second window: the 81st send after any send is at least a second later.
    for (let i = 0; i + 80 < sends.length; i++) {
      expect(sends[i + 80]!.at - sends[i]!.at).toBeGreaterThanOrEqual(999.999);
    }
    const span = sends[299]!.at - sends[0]!.at;
    // 299 intervals of 12.5 ms: ~3.74 s, not much more (the schedule does not drift).
    expect(span).toBeGreaterThanOrEqual(3_700);
    expect(span).toBeLessThan(4_500);
    // Per-recipient values: the message sent to each row carries that row's BODY values.
    for (const [i, s] of sends.entries()) {
      const m = rig.emu!.messaging.state.messages.get(s.message_id)!.message!;
      const row = Number(s.to.slice(-4));
      expect(m, `send ${i}`).toEqual({
        type: 'template',
        template: { name: 'spring_sale', body_params: [`name${row}`, `item${row}`] },
      });
    }
    // Each message: one sent and one delivered, nothing twice.
    const byId = new Map<string, string[]>();
    for (const s of hook.accepted) byId.set(s.id, [...(byId.get(s.id) ?? []), s.status]);
    expect(byId.size).toBe(300);
    for (const list of byId.values()) expect(list.sort()).toEqual(['delivered', 'sent']);
    // 600 posts over a bounded set of keep-alive sockets, not one socket each.
    expect(hook.connections()).toBeLessThanOrEqual(16);

    // Finished: the template can be deleted now.
    const later = await call(url, 'POST', '/v1/chat_template_manager', {
      token: key,
      body: { action: 'delete', templateName: 'spring_sale' },
    });
    expect(later.status).toBe(200);
  });

  it('1,000 recipients (a body past 64 KB) at 1,000/s: 2,000 posts over at most 16 sockets, none lost', async () => {
    const hook = await startReceiver();
    const { url, key } = await start({
      webhookUrl: hook.url,
      readDelayMs: -1,
      deliveryDelayMs: 10,
      campaignRatePerSecond: 1000,
    });
    await approvedTemplate(url, key, 'big_list');
    const audience = rows(1000).map((row) => ({ ...row, BODY_1: `${row.BODY_1} Smith` }));
    expect(JSON.stringify(audience).length).toBeGreaterThan(64 * 1024);
    const r = await call(url, 'POST', '/v1/chat_campaign_creator', {
      token: key,
      body: { campaign_name: 'big_run', template_name: 'big_list', audience_rows: audience },
    });
    expect(r.status).toBe(200);
    await waitFor(() => hook.accepted.length === 2000, 15_000, '2,000 accepted posts', 20);
    expect(hook.connections()).toBeLessThanOrEqual(16);
    expect(new Set(hook.accepted.map((s) => `${s.id}/${s.status}`)).size).toBe(2000);
    const sends = rig.emu!.messaging.stats('default').sends;
    expect(new Set(sends.map((s) => s.to)).size).toBe(1000);
    for (let i = 0; i + 1000 < sends.length; i++) {
      expect(sends[i + 1000]!.at - sends[i]!.at).toBeGreaterThanOrEqual(999.999);
    }
  });

  it('refusals: 400 missing fields or rows, 404 unknown or other-case template, 400 not approved, 409, 402, row BODY', async () => {
    const { url, key } = await start();
    await approvedTemplate(url, key, 'promo_code');
    await call(url, 'POST', '/v1/chat_template_manager', {
      token: key,
      body: {
        action: 'create',
        templateData: {
          name: 'still_pending',
          category: 'UTILITY',
          language: 'en_US',
          components: [{ type: 'BODY', text: 'Plain' }],
        },
      },
    });
    const create = (body: unknown) => call(url, 'POST', '/v1/chat_campaign_creator', { token: key, body });
    const ok = { campaign_name: 'first_run', template_name: 'promo_code', audience_rows: rows(2) };

    expect((await create({ ...ok, campaign_name: undefined })).status).toBe(400);
    expect((await create({ ...ok, template_name: undefined })).status).toBe(400);
    const empty = await create({ ...ok, audience_rows: [] });
    expect(empty.status).toBe(400);
    expect(empty.body.error).toMatch(/audience_rows/);
    expect((await create({ ...ok, template_name: 'Promo_Code' })).status).toBe(404);
    expect((await create({ ...ok, template_name: 'nothing_here' })).status).toBe(404);
    const pending = await create({
      ...ok,
      template_name: 'still_pending',
      audience_rows: [{ phone: phone(1) }],
    });
    expect(pending.status).toBe(400);
    expect(pending.body.error).toMatch(/PENDING/);
    const missingBody = await create({
      ...ok,
      audience_rows: [
        { phone: phone(1), BODY_1: 'a', BODY_2: 'b' },
        { phone: phone(2), BODY_1: 'a' },
      ],
    });
    expect(missingBody.status).toBe(400);
    expect(missingBody.body.error).toMatch(/audience_rows\[1\]/);

    rig.emu!.messaging.setAccount('default', { credits: 1 });
    const poor = await create(ok);
    expect(poor.status).toBe(402);
    rig.emu!.messaging.setAccount('default', { credits: null });
    expect((await create(ok)).status).toBe(200);
    const dup = await create(ok);
    expect(dup.status).toBe(409);
    expect(dup.body.success).toBe(false);
  });

  it('a failed launch answers 207 with status saved; posting its id launches it once', async () => {
    const hook = await startReceiver();
    const { url, key } = await start({ webhookUrl: hook.url, readDelayMs: -1, deliveryDelayMs: 10 });
    await approvedTemplate(url, key, 'renewal_notice');
    expect(
      (await call(url, 'POST', '/emulator/messaging/campaigns/fail-next-launch', { body: {} })).body,
    ).toEqual({ fail_next_launches: 1 });
    const saved = await call(url, 'POST', '/v1/chat_campaign_creator', {
      token: key,
      body: { campaign_name: 'renewals', template_name: 'renewal_notice', audience_rows: rows(5) },
    });
    expect(saved.status).toBe(207);
    const campaign = saved.body.campaign as { id: string; status: string };
    expect(campaign.status).toBe('saved');
    await quietFor(100, 'a send of the saved campaign');
    expect(rig.emu!.messaging.stats('default').sends).toHaveLength(0);

    const launched = await call(url, 'POST', '/v1/chat_campaign_creator', {
      token: key,
      body: { campaign_id: campaign.id },
    });
    expect(launched.status).toBe(200);
    expect(launched.body.campaign).toMatchObject({
      id: campaign.id,
      status: 'launched',
      total_recipients: 5,
    });
    const again = await call(url, 'POST', '/v1/chat_campaign_creator', {
      token: key,
      body: { campaign_id: campaign.id },
    });
    expect(again.status).toBe(409);
    const other = rig.emu!.messaging.createWorkspace(1);
    const foreign = await call(url, 'POST', '/v1/chat_campaign_creator', {
      token: other.api_key,
      body: { campaign_id: campaign.id },
    });
    expect(foreign.status).toBe(403);
    await waitFor(
      () => hook.accepted.filter((s) => s.status === 'delivered').length === 5,
      3_000,
      'five delivered',
    );
    expect(rig.emu!.messaging.stats('default').sends).toHaveLength(5);
  });

  it('webhook retries: 500 twice then 200 is accepted once per post; a receiver that always fails is dropped after 5', async () => {
    const hook = await startReceiver((n) => (n <= 2 ? 500 : 200));
    const { url, key } = await start({
      webhookUrl: hook.url,
      readDelayMs: -1,
      deliveryDelayMs: 10,
      webhookBackoffMs: 20,
    });
    await approvedTemplate(url, key, 'retry_check');
    await call(url, 'POST', '/v1/chat_campaign_creator', {
      token: key,
      body: { campaign_name: 'retry_run', template_name: 'retry_check', audience_rows: rows(10) },
    });
    await waitFor(() => hook.accepted.length === 20, 5_000, '20 accepted posts (sent and delivered of 10)');
    await waitFor(() => rig.emu!.messaging.pending === 0, 3_000, 'nothing pending');
    expect([...hook.attempts.values()].every((n) => n === 3)).toBe(true);
    const keys = hook.accepted.map((s) => `${s.id}/${s.status}`);
    expect(new Set(keys).size).toBe(20);
    const stats = (await call(url, 'GET', '/emulator/messaging/stats')).body.webhooks;
    expect(stats).toEqual({ attempted: 60, succeeded: 20, failed: 40, dropped: 0, pending: 0 });

    // Now a receiver that never succeeds: 5 attempts (20, 40, 80, 160 ms apart), then dropped.
    await rig.receiver!.close();
    const down = await startReceiver(() => 503);
    await call(url, 'PUT', '/emulator/messaging/webhook', { body: { url: down.url } });
    expect((await call(url, 'GET', '/emulator/messaging/webhook')).body).toEqual({
      url: down.url,
      token_set: false,
    });
    rig.emu!.messaging.inbound('default', phone(1));
    await waitFor(() => rig.emu!.messaging.state.webhook.dropped === 1, 5_000, 'the post dropped');
    expect([...down.attempts.values()]).toEqual([5]);
    expect(rig.emu!.messaging.state.webhook).toMatchObject({
      attempted: 65,
      succeeded: 20,
      failed: 45,
      dropped: 1,
    });
  });

  it('close() clears every timer: a campaign in progress stops sending', async () => {
    const { url, key } = await start({ campaignRatePerSecond: 10 });
    await approvedTemplate(url, key, 'slow_one');
    await call(url, 'POST', '/v1/chat_campaign_creator', {
      token: key,
      body: { campaign_name: 'slow_run', template_name: 'slow_one', audience_rows: rows(50) },
    });
    await waitFor(() => rig.emu!.messaging.state.sends.length > 0, 2_000, 'the campaign to start sending');
    const before = rig.emu!.messaging.state.sends.length;
    expect(before).toBeGreaterThan(0);
    expect(before).toBeLessThan(50);
    await rig.emu!.close();
    const after = rig.emu!.messaging.state.sends.length;
    await quietFor(300, 'a send after close');
    expect(rig.emu!.messaging.state.sends.length).toBe(after);
    rig.emu = undefined;
  });
});
