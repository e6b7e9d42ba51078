/**
 * Template and campaign management through the bridge (scope `messages:manage`), the records of a
 * campaign's messages, and the OpenAPI document of the messaging routes, on a real bridge whose
 * messaging client talks to the real provider emulator over loopback, the emulator's webhooks posted
 * back to the bridge.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_CAMPAIGN_RECIPIENTS } from '../../src/messaging/rules.js';
import { call } from '../control/harness.js';
import { type MessagingRig, restToken, startMessagingRig } from '../helpers/messaging.js';
import { waitFor } from '../helpers/wait.js';

type Rig = MessagingRig;

/** Deliveries after 20 ms, reads after 40 (-1: none), template reviews after 50. */
const startRig = (o: { readDelayMs?: number } = {}) =>
  startMessagingRig({
    messaging: { deliveryDelayMs: 20, readDelayMs: o.readDelayMs ?? 40, reviewDelayMs: 50 },
  });

/** Creates a UTILITY chat template in en_US whose body is `text` (one variable, sample "Ada"). */
const chatTemplate = (rig: Rig, token: string, name: string, text: string) =>
  call(rig.http, 'POST', '/v1/messaging/chat/templates', {
    token,
    body: {
      name,
      category: 'UTILITY',
      language: 'en_US',
      components: [{ type: 'BODY', text }],
      sample_values: { '1': 'Ada' },
    },
  });

const chatCampaign = (
  rig: Rig,
  token: string,
  campaign_name: string,
  template_name: string,
  audience_rows: Record<string, string>[],
) =>
  call(rig.http, 'POST', '/v1/messaging/chat/campaigns', {
    token,
    body: { campaign_name, template_name, audience_rows },
  });

const relaunchChatCampaign = (rig: Rig, token: string, id: string) =>
  call(rig.http, 'POST', `/v1/messaging/chat/campaigns/${id}/launch`, { token });

describe('template and campaign management', () => {
  const open: { close(): unknown }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });

  it('chat templates: create, status, list, sync, delete; a campaign; scope messages:manage', async () => {
    const rig = await startRig();
    open.push(rig);
    const token = await restToken(['messages:manage']);
    const input = {
      name: 'visit_reminder',
      category: 'UTILITY',
      language: 'en_US',
      components: [{ type: 'BODY', text: 'Hello {{1}}, see you soon' }],
      sample_values: { '1': 'Ada' },
    };
    expect((await call(rig.http, 'POST', '/v1/messaging/chat/templates', { body: input })).status).toBe(401);
    expect(
      (
        await call(rig.http, 'POST', '/v1/messaging/chat/templates', {
          token: await restToken(['calls:control']),
          body: input,
        })
      ).status,
    ).toBe(403);
    const created = await call(rig.http, 'POST', '/v1/messaging/chat/templates', { token, body: input });
    expect(created.status).toBe(201);
    expect(created.body.template).toMatchObject({ template_name: 'visit_reminder', status: 'PENDING' });
    const bad = await call(rig.http, 'POST', '/v1/messaging/chat/templates', {
      token,
      body: { ...input, name: 'Visit-Reminder' },
    });
    expect(bad.status).toBe(400);
    const dup = await call(rig.http, 'POST', '/v1/messaging/chat/templates', { token, body: input });
    expect(dup.status).toBe(409);

    rig.emulator.messaging.review('default', 'visit_reminder', 'APPROVED');
    const status = await call(rig.http, 'GET', '/v1/messaging/chat/templates/visit_reminder', { token });
    expect(status.status).toBe(200);
    expect(status.body.template).toMatchObject({ template_name: 'visit_reminder', status: 'APPROVED' });
    const list = await call(rig.http, 'GET', '/v1/messaging/chat/templates?status=APPROVED', { token });
    expect(list.status).toBe(200);
    expect(list.body.count).toBe(1);
    expect((await call(rig.http, 'POST', '/v1/messaging/chat/templates/sync', { token })).status).toBe(204);
    expect((await call(rig.http, 'GET', '/v1/messaging/chat/templates/nothing_here', { token })).status).toBe(
      404,
    );

    const campaign = await chatCampaign(rig, token, 'spring_visits', 'visit_reminder', [
      { phone: '14155550111', BODY_1: 'Ada' },
    ]);
    expect(campaign.status).toBe(200);
    expect(campaign.body).toMatchObject({ launched: true, campaign: { template_name: 'visit_reminder' } });

    rig.emulator.messaging.failNextLaunch(1);
    const saved = await chatCampaign(rig, token, 'autumn_visits', 'visit_reminder', [
      { phone: '14155550112', BODY_1: 'Bo' },
    ]);
    expect(saved.status).toBe(207);
    const campaignId = (saved.body.campaign as { id: string }).id;
    const relaunch = await relaunchChatCampaign(rig, token, campaignId);
    expect(relaunch.status).toBe(200);
    expect(relaunch.body.launched).toBe(true);

    const rcs = await call(rig.http, 'POST', '/v1/messaging/rcs/campaigns', {
      token,
      body: { template_name: 'nope', campaign_name: 'x', contacts: [{ mobile: '4155550111' }] },
    });
    expect(rcs.status).toBe(400);
  });
});

describe('campaign size', () => {
  it('a campaign of more recipients than the message store holds is refused (400) before the provider is asked', async () => {
    const rig = await startRig();
    try {
      const token = await restToken(['messages:manage']);
      const max = MAX_CAMPAIGN_RECIPIENTS;
      const upstreamBefore = rig.upstream.length;
      const rows = Array.from({ length: max + 1 }, (_, i) => ({
        phone: String(14150000000 + i),
        BODY_1: 'A',
      }));
      const chat = await chatCampaign(rig, token, 'too_big', 'any_template', rows);
      expect(chat.status).toBe(400);
      expect(chat.body.error).toBe('invalid_field');
      expect(chat.body.message).toMatch(/^audience_rows must be at most 10,000 recipients/);
      const rcs = await call(rig.http, 'POST', '/v1/messaging/rcs/campaigns', {
        token,
        body: {
          template_name: 'any_template',
          campaign_name: 'too_big',
          contacts: Array.from({ length: max + 1 }, (_, i) => ({ mobile: String(7000000000 + i) })),
        },
      });
      expect(rcs.status).toBe(400);
      expect(rcs.body.message).toMatch(/^contacts must be at most 10,000 recipients/);
      expect(rig.upstream.length).toBe(upstreamBefore);
    } finally {
      await rig.close();
    }
  });
});

describe('campaign records', () => {
  const open: { close(): unknown }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });

  /** Polls GET /v1/messages/{id} until every send's message shows `status`; answers the records. */
  async function recordsOf(rig: Rig, token: string, sends: { message_id: string }[], status: string) {
    const ids = sends.map((x) => x.message_id);
    const records = new Map<string, Record<string, unknown>>();
    await waitFor(
      async () => {
        for (const id of ids) {
          if (records.has(id)) continue;
          const r = await call(rig.http, 'GET', `/v1/messages/${encodeURIComponent(id)}`, { token });
          if (r.status === 200 && r.body.status === status) records.set(id, r.body);
        }
        return records.size === ids.length;
      },
      10_000,
      `all ${ids.length} messages to show ${status}`,
      20,
    );
    return records;
  }

  const campaignSends = (rig: Rig, campaignId: string) =>
    rig.emulator.messaging.stats().sends.filter((x) => x.campaign_id === campaignId);

  it('every message of a chat campaign launched through the bridge has a record, for its tenant only', async () => {
    // Read receipts off: delivered is each message's last status.
    const rig = await startRig({ readDelayMs: -1 });
    open.push(rig);
    const token = await restToken(['messages:manage', 'messages:read'], 'acme');
    const created = await chatTemplate(rig, token, 'visit_reminder', 'Hello {{1}}, see you soon');
    expect(created.status).toBe(201);
    rig.emulator.messaging.review('default', 'visit_reminder', 'APPROVED');

    const phones = Array.from({ length: 20 }, (_, i) => `1415555${String(1000 + i)}`);
    const launched = await chatCampaign(
      rig,
      token,
      'spring_visits',
      'visit_reminder',
      phones.map((phone, i) => ({ phone, BODY_1: `Guest ${i}` })),
    );
    expect(launched.status).toBe(200);
    const campaignId = (launched.body.campaign as { id: string }).id;
    await waitFor(() => campaignSends(rig, campaignId).length === 20, 10_000, 'the 20 sends');
    const sends = campaignSends(rig, campaignId);
    expect(new Set(sends.map((x) => x.to))).toEqual(new Set(phones));

    const records = await recordsOf(rig, token, sends, 'delivered');
    for (const x of sends) {
      expect(records.get(x.message_id)).toMatchObject({
        message_id: x.message_id,
        channel: 'chat',
        to: x.to,
        kind: 'campaign',
        campaign_id: campaignId,
        status: 'delivered',
      });
      expect(records.get(x.message_id)?.session_id).toBeUndefined();
    }
    const other = await restToken(['messages:read'], 'other');
    const hidden = await call(rig.http, 'GET', `/v1/messages/${encodeURIComponent(sends[0]!.message_id)}`, {
      token: other,
    });
    expect(hidden.status).toBe(404);
    expect(hidden.body.error).toBe('not_found');
  });

  it('a campaign saved but not launched (207) gets records when its relaunch launches it; RCS campaigns too', async () => {
    const rig = await startRig({ readDelayMs: -1 });
    open.push(rig);
    const token = await restToken(['messages:manage', 'messages:read']);
    await chatTemplate(rig, token, 'autumn_note', 'Hello {{1}}');
    rig.emulator.messaging.review('default', 'autumn_note', 'APPROVED');
    rig.emulator.messaging.failNextLaunch(1);
    const saved = await chatCampaign(rig, token, 'autumn_visits', 'autumn_note', [
      { phone: '14155550301', BODY_1: 'Bo' },
      { phone: '14155550302', BODY_1: 'Cy' },
    ]);
    expect(saved.status).toBe(207);
    const campaignId = (saved.body.campaign as { id: string }).id;
    expect(campaignSends(rig, campaignId)).toHaveLength(0);
    const relaunch = await relaunchChatCampaign(rig, token, campaignId);
    expect(relaunch.status).toBe(200);
    await waitFor(() => campaignSends(rig, campaignId).length === 2, 5_000, 'the 2 sends');
    const chat = await recordsOf(rig, token, campaignSends(rig, campaignId), 'delivered');
    for (const r of chat.values()) expect(r).toMatchObject({ kind: 'campaign', campaign_id: campaignId });

    const tpl = await call(rig.http, 'POST', '/v1/messaging/rcs/templates', {
      token,
      body: { template_name: 'order_ready', template_type: 'text', bot_name: 'Shop', text: 'Ready' },
    });
    expect(tpl.status).toBe(201);
    const mobiles = ['4155550401', '4155550402', '4155550403'];
    const rcs = await call(rig.http, 'POST', '/v1/messaging/rcs/campaigns', {
      token,
      body: {
        template_name: 'order_ready',
        campaign_name: 'orders_ready',
        contacts: mobiles.map((mobile) => ({ mobile })),
      },
    });
    expect(rcs.status).toBe(200);
    const rcsId = rcs.body.campaign_id as string;
    await waitFor(() => campaignSends(rig, rcsId).length === 3, 5_000, 'the 3 RCS sends');
    const sends = campaignSends(rig, rcsId);
    const records = await recordsOf(rig, token, sends, 'delivered');
    for (const x of sends) {
      expect(records.get(x.message_id)).toMatchObject({
        channel: 'rcs',
        to: x.to,
        kind: 'campaign',
        campaign_id: rcsId,
      });
    }
  });
});

describe('the OpenAPI document', () => {
  it('lists every messaging route under the messaging tag, and the tag itself; management routes say they are an operator scope', async () => {
    const rig = await startRig();
    try {
      const r = await call(rig.http, 'GET', '/docs/json');
      expect(r.status).toBe(200);
      expect(r.body.tags).toEqual(
        expect.arrayContaining([{ name: 'messaging', description: expect.stringContaining('RCS') }]),
      );
      const paths = r.body.paths as Record<string, Record<string, { tags?: string[] }>>;
      const tagged = Object.entries(paths).flatMap(([path, ops]) =>
        Object.entries(ops)
          .filter(([, op]) => op.tags?.includes('messaging') === true)
          .map(([method]) => `${method.toUpperCase()} ${path}`),
      );
      expect(tagged.sort()).toEqual(
        [
          'POST /v1/sessions/{id}/message',
          'POST /v1/webhooks/messaging',
          'GET /v1/messages/{id}',
          'GET /v1/messaging/chat/templates',
          'POST /v1/messaging/chat/templates',
          'POST /v1/messaging/chat/templates/sync',
          'GET /v1/messaging/chat/templates/{name}',
          'DELETE /v1/messaging/chat/templates/{name}',
          'POST /v1/messaging/chat/campaigns',
          'POST /v1/messaging/chat/campaigns/{id}/launch',
          'POST /v1/messaging/rcs/templates',
          'POST /v1/messaging/rcs/campaigns',
        ].sort(),
      );
      // Management reaches the one provider account every tenant shares: each route says so.
      const manage = Object.entries(paths).flatMap(([path, ops]) =>
        path.startsWith('/v1/messaging/')
          ? Object.entries(ops).map(([method, op]) => ({
              route: `${method.toUpperCase()} ${path}`,
              description: (op as { description?: string }).description,
            }))
          : [],
      );
      expect(manage).toHaveLength(9);
      for (const { route, description } of manage) {
        expect(description, route).toMatch(
          /^Operator scope \(messages:manage\): every tenant shares the bridge's one provider messaging account \(MESSAGING_TOKEN\)/,
        );
      }
    } finally {
      await rig.close();
    }
  });
});
