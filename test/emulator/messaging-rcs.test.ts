import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { RcsButtonClickEvent, RcsDeliveryStatusEvent } from '../../src/emulator/messaging/wire.js';
import { call } from '../helpers/http-call.js';
import { useMessagingEmulator } from '../helpers/messaging-emulator.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'messaging-rcs-secret';

const rig = useMessagingEmulator(SECRET);
const start = rig.start;

type Event = RcsDeliveryStatusEvent | RcsButtonClickEvent;

async function startReceiver(): Promise<{ url: string; events: Event[] }> {
  const events: Event[] = [];
  const app = Fastify();
  app.post('/rcs', async (req) => {
    events.push(req.body as Event);
    return { ok: true };
  });
  const url = await rig.listen(app, '/rcs');
  return { url, events };
}

const TEXT = {
  action: 'create_template',
  template_name: 'order_ready',
  template_type: 'text',
  bot_name: 'Acme Bot',
  text: 'Hi {{name}}, order {{order}} is ready',
  suggestions: [
    { type: 'reply', label: 'Track', postback: 'track_{{order}}' },
    { type: 'url', label: 'Open', url: 'https://example.com/o' },
  ],
};
const STANDALONE = {
  action: 'create_template',
  template_name: 'new_arrival',
  template_type: 'standalone',
  bot_name: 'Acme Bot',
  title: 'New in: {{item}}',
  media_url: 'https://example.com/a.png',
  orientation: 'VERTICAL',
  media_height: 'MEDIUM_HEIGHT',
  suggestions: [{ type: 'phone', label: 'Call us', phone: '+14155550100' }],
};
const CAROUSEL = {
  action: 'create_template',
  template_name: 'three_picks',
  template_type: 'carousel',
  bot_name: 'Picks Bot',
  card_width: 'SMALL',
  cards: [
    { title: 'One', suggestions: [{ type: 'url', label: 'See', url: 'https://example.com/1' }] },
    { title: 'Two' },
  ],
};

describe('messaging emulator: RCS templates and campaigns', () => {
  it('creates text, standalone and carousel templates; duplicates 409; invalid 400', async () => {
    const { url, key } = await start();
    for (const t of [TEXT, STANDALONE, CAROUSEL]) {
      const r = await call(url, 'POST', '/v1/rcs_template_manager', { token: key, body: t });
      // rcs.md: a 200 means created, its body not shown: the emulator's holds no `success` flag.
      expect(r.status, t.template_type).toBe(200);
      expect(r.body).toEqual({ message: `template ${t.template_name} created` });
      expect(rig.emu!.messaging.state.accounts.get('default')!.rcsTemplates.has(t.template_name)).toBe(true);
    }
    const dup = await call(url, 'POST', '/v1/rcs_template_manager', { token: key, body: TEXT });
    expect(dup.status).toBe(409);
    const oneCard = await call(url, 'POST', '/v1/rcs_template_manager', {
      token: key,
      body: { ...CAROUSEL, template_name: 'one_card', cards: [{ title: 'Only' }] },
    });
    expect(oneCard.status).toBe(400);
    expect(oneCard.body.success).toBe(false);
    expect(oneCard.body.error).toMatch(/cards/);
    const noAuth = await call(url, 'POST', '/v1/rcs_template_manager', { body: TEXT });
    expect(noAuth.status).toBe(401);
  });

  it('campaign: unknown template 400, contacts checked against {{variables}}, then queued with delivery_status posts', async () => {
    const hook = await startReceiver();
    const { url, key } = await start({ webhookUrl: hook.url, deliveryDelayMs: 20, readDelayMs: 30 });
    await call(url, 'POST', '/v1/rcs_template_manager', { token: key, body: TEXT });
    const launch = (body: unknown) => call(url, 'POST', '/v1/rcs_campaign_launcher', { token: key, body });
    const contacts = Array.from({ length: 20 }, (_v, i) => ({
      mobile: `98765${String(i).padStart(5, '0')}`,
      params: { name: `n${i}`, order: `o${i}` },
    }));
    rig.emu!.messaging.setUndeliverable([contacts[3]!.mobile]);

    const unknown = await launch({ template_name: 'Order_Ready', campaign_name: 'c1', contacts });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatch(/unknown template_name/);
    const missing = await launch({
      template_name: 'order_ready',
      campaign_name: 'c1',
      contacts: [{ mobile: '9876500000', params: { name: 'x' } }],
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatch(/contacts\[0\]\.params\.order/);
    const extra = await launch({
      template_name: 'order_ready',
      campaign_name: 'c1',
      contacts: [{ mobile: '9876500000', params: { name: 'x', order: 'y', colour: 'z' } }],
    });
    expect(extra.status).toBe(400);
    const shortNumber = await launch({
      template_name: 'order_ready',
      campaign_name: 'c1',
      contacts: [{ mobile: '98765', params: { name: 'x', order: 'y' } }],
    });
    expect(shortNumber.status).toBe(400);

    const r = await launch({ template_name: 'order_ready', campaign_name: 'c1', contacts });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'queued', messages_queued: 20 });
    expect(typeof r.body.campaign_id).toBe('string');
    expect((await launch({ template_name: 'order_ready', campaign_name: 'c1', contacts })).status).toBe(409);

    const statuses = () =>
      hook.events.filter((e): e is RcsDeliveryStatusEvent => e.event_type === 'delivery_status');
    // 19 deliverable: sent, delivered, read; one undeliverable: sent, failed.
    await waitFor(() => statuses().length === 19 * 3 + 2, 5_000, 'every delivery_status event');
    const byId = new Map<string, RcsDeliveryStatusEvent[]>();
    for (const e of statuses()) byId.set(e.message_id, [...(byId.get(e.message_id) ?? []), e]);
    expect(byId.size).toBe(20);
    for (const posted of byId.values()) {
      // Posts go several at once, so they may arrive out of order, as a real sender's do: a receiver
      // orders a message's events by their timestamps, which the sequence must keep.
      const list = [...posted].sort((a, b) => Date.parse(a.timestamp) - Date.parse(b.timestamp));
      expect(list[0]!.bot_id).toBe('Acme Bot');
      expect(list[0]!.status_details?.sent_at).toMatch(/Z$/);
      if (list[0]!.recipient === contacts[3]!.mobile) {
        expect(list.map((e) => e.status)).toEqual(['sent', 'failed']);
        expect(list[1]!.error).toEqual({ code: 'INVALID_NUMBER', message: expect.any(String) });
      } else {
        expect(list.map((e) => e.status)).toEqual(['sent', 'delivered', 'read']);
        expect(list[1]!.status_details?.delivered_at).toMatch(/Z$/);
      }
    }
    const sends = rig.emu!.messaging.stats('default').sends;
    expect(sends.map((s) => s.to).sort()).toEqual(contacts.map((c) => c.mobile).sort());
    expect(sends.every((s) => s.channel === 'rcs' && s.campaign_id === r.body.campaign_id)).toBe(true);

    // A tap on the reply suggestion posts button_click with the contact's rendered postback_data.
    const five = sends.find((s) => s.to === contacts[5]!.mobile)!;
    const tap = await call(url, 'POST', '/emulator/messaging/tap', {
      body: { message_id: five.message_id, button_id: 'track_o5' },
    });
    expect(tap.status).toBe(200);
    await waitFor(() => hook.events.some((e) => e.event_type === 'button_click'), 3_000, 'the button_click');
    const click = hook.events.find((e): e is RcsButtonClickEvent => e.event_type === 'button_click')!;
    expect(click).toMatchObject({
      event_type: 'button_click',
      message_id: five.message_id,
      bot_id: 'Acme Bot',
      user_phone: contacts[5]!.mobile,
      // Every documented interaction field, null where it does not apply (no url on a postback).
      interaction: { type: 'action', button_text: 'Track', postback_data: 'track_o5', url: null },
    });
    expect(click.timestamp).toMatch(/Z$/);
  });

  it('RCS campaigns follow the credit and tier rules', async () => {
    const { url, key } = await start();
    await call(url, 'POST', '/v1/rcs_template_manager', { token: key, body: CAROUSEL });
    const contacts = Array.from({ length: 5 }, (_v, i) => ({ mobile: `900000000${i}` }));
    rig.emu!.messaging.setAccount('default', { credits: 4 });
    const poor = await call(url, 'POST', '/v1/rcs_campaign_launcher', {
      token: key,
      body: { template_name: 'three_picks', campaign_name: 'picks', contacts },
    });
    expect(poor.status).toBe(402);
    rig.emu!.messaging.setAccount('default', { credits: null, tier: 1 });
    const a = rig.emu!.messaging.state.accounts.get('default')!;
    for (let i = 0; i < 998; i++) a.dayLog.push(Date.now());
    const over = await call(url, 'POST', '/v1/rcs_campaign_launcher', {
      token: key,
      body: { template_name: 'three_picks', campaign_name: 'picks', contacts },
    });
    expect(over.status).toBe(429);
    expect(over.body.error_data).toMatchObject({ code: 133000 });
  });
});
