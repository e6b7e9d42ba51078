/**
 * Messaging end to end: a real bridge and the real provider emulator on 127.0.0.1, real JWTs, real HTTP
 * and WebSockets, the emulator's webhooks posted to the bridge's `/v1/webhooks/messaging` with the
 * webhook secret, calls opened by a real provider socket and heard by a real ws bot. Nothing is mocked:
 * what the emulator did is read back from its control API (`/emulator/messaging/stats`) and, for the
 * rendered values of a campaign's sends, from its state.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SendRecord } from '../../src/emulator/messaging/state.js';
import type { ChatMessage } from '../../src/provider/messaging/types.js';
import {
  type MessagingRig,
  type MessagingRigOptions,
  maxInWindow,
  startMessagingRig,
  WEBHOOK_SECRET,
} from '../helpers/messaging.js';
import { waitFor } from '../helpers/wait.js';

const open: MessagingRig[] = [];
afterEach(async () => {
  for (const r of open.splice(0).reverse()) await r.close();
});

async function rig(o: MessagingRigOptions = {}): Promise<MessagingRig> {
  const r = await startMessagingRig(o);
  open.push(r);
  return r;
}

/** A chat template: a body with `vars` variables, samples for each, and optional extra components. */
function chatTemplate(name: string, o: { vars?: number; category?: string; extra?: unknown[] } = {}) {
  const vars = o.vars ?? 1;
  const text = `Hello${Array.from({ length: vars }, (_, i) => ` {{${i + 1}}}`).join(',')}, see you soon`;
  return {
    name,
    category: o.category ?? 'UTILITY',
    language: 'en_US',
    components: [{ type: 'BODY', text }, ...(o.extra ?? [])],
    ...(vars > 0
      ? { sample_values: Object.fromEntries(Array.from({ length: vars }, (_, i) => [`${i + 1}`, `s${i}`])) }
      : {}),
  };
}

async function stats(r: MessagingRig): Promise<{ sends: SendRecord[]; webhooks: Record<string, number> }> {
  const s = await r.control('GET', '/stats');
  expect(s.status).toBe(200);
  return s.body as unknown as { sends: SendRecord[]; webhooks: Record<string, number> };
}

/** Creates a chat template through the bridge and has the emulator approve it at once. */
async function approvedTemplate(r: MessagingRig, token: string, body: ReturnType<typeof chatTemplate>) {
  const created = await r.api('POST', '/v1/messaging/chat/templates', { token, body });
  expect(created.status, created.text).toBe(201);
  const review = await r.control('POST', `/accounts/default/templates/${body.name}/review`, {
    status: 'APPROVED',
  });
  expect(review.status, review.text).toBe(200);
}

const sendPath = (session: string) => `/v1/sessions/${session}/message`;
const TEXT = { channel: 'chat', message: { type: 'text', text: { body: 'Here is the link you asked for' } } };

// ---------------------------------------------------------------------------------------------------

describe('1. chat template lifecycle through the management routes', () => {
  it('create PENDING, list filters, APPROVED after the review delay, REJECTED with its reason, sync, sends, delete rules', async () => {
    const REVIEW_MS = 600;
    const r = await rig({ messaging: { reviewDelayMs: REVIEW_MS, deliveryDelayMs: 20, readDelayMs: -1 } });
    const token = await r.token();
    const { bot } = await r.liveCall('life-call', '+14155550101');

    const body = chatTemplate('order_update', {
      vars: 2,
      extra: [{ type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'Confirm' }] }],
    });
    const createdAt = performance.now();
    const created = await r.api('POST', '/v1/messaging/chat/templates', { token, body });
    expect(created.status, created.text).toBe(201);
    expect(created.body.template).toMatchObject({
      template_name: 'order_update',
      status: 'PENDING',
      category: 'UTILITY',
      language: 'en_US',
    });

    // Sent from while still PENDING: the provider refuses, the bridge passes it on as a 400.
    const early = await r.api('POST', sendPath('life-call'), {
      token,
      body: {
        channel: 'chat',
        template: { name: 'order_update', language: 'en_US', body_params: ['Ada', 'A-1'] },
      },
    });
    expect(early.status, early.text).toBe(400);
    expect(early.body.message).toMatch(/order_update is PENDING: only an APPROVED template can be sent/);

    // A second template, rejected by the operator's review (the emulator's control call).
    const promo = chatTemplate('spring_promo', { category: 'MARKETING' });
    expect((await r.api('POST', '/v1/messaging/chat/templates', { token, body: promo })).status).toBe(201);
    const reason = 'Promotional content is not allowed without an opt-out';
    const rejected = await r.control('POST', '/accounts/default/templates/spring_promo/review', {
      status: 'REJECTED',
      reason,
    });
    expect(rejected.status).toBe(200);
    const promoStatus = await r.api('GET', '/v1/messaging/chat/templates/spring_promo', { token });
    expect(promoStatus.status).toBe(200);
    expect(promoStatus.body.template).toMatchObject({ status: 'REJECTED', rejection_reason: reason });

    // List filters, while order_update is still pending.
    const names = async (q: string) => {
      const l = await r.api('GET', `/v1/messaging/chat/templates${q}`, { token });
      expect(l.status, l.text).toBe(200);
      const templates = l.body.templates as { template_name: string }[];
      expect(l.body.count).toBe(templates.length);
      return templates.map((t) => t.template_name).sort();
    };
    expect(await names('')).toEqual(['order_update', 'spring_promo']);
    expect(await names('?status=PENDING')).toEqual(['order_update']);
    expect(await names('?status=REJECTED')).toEqual(['spring_promo']);
    expect(await names('?category=MARKETING')).toEqual(['spring_promo']);
    expect(await names('?status=APPROVED&category=UTILITY')).toEqual([]);
    expect((await r.api('GET', '/v1/messaging/chat/templates?status=approved', { token })).status).toBe(400);

    // get_status until the review delay approves it.
    let status = '';
    let quality = '';
    for (
      const deadline = performance.now() + 5_000;
      status !== 'APPROVED' && performance.now() < deadline;
    ) {
      const s = await r.api('GET', '/v1/messaging/chat/templates/order_update', { token });
      expect(s.status).toBe(200);
      const t = s.body.template as { status: string; rejection_reason: unknown; quality_score: string };
      status = t.status;
      quality = t.quality_score;
      if (status === 'APPROVED') expect(t.rejection_reason).toBeNull();
      else await new Promise((res) => setTimeout(res, 50));
    }
    const approvedAfter = performance.now() - createdAt;
    expect(status).toBe('APPROVED');
    expect(quality).toBe('GREEN');
    expect(approvedAfter).toBeGreaterThanOrEqual(REVIEW_MS - 50);
    expect(await names('?status=APPROVED&category=UTILITY')).toEqual(['order_update']);
    expect((await r.api('POST', '/v1/messaging/chat/templates/sync', { token })).status).toBe(204);

    // Sent from once APPROVED: 200, and its delivery reaches the call's bot.
    const sent = await r.api('POST', sendPath('life-call'), {
      token,
      body: {
        channel: 'chat',
        template: { name: 'order_update', language: 'en_US', body_params: ['Ada', 'A-1'] },
      },
    });
    expect(sent.status, sent.text).toBe(200);
    await bot.waitEvent(
      'message_status',
      5_000,
      (e) => e.message_id === sent.body.message_id && e.status === 'delivered',
    );
    // The rejected one cannot be sent.
    const fromRejected = await r.api('POST', sendPath('life-call'), {
      token,
      body: { channel: 'chat', template: { name: 'spring_promo', language: 'en_US', body_params: ['x'] } },
    });
    expect(fromRejected.status).toBe(400);
    expect(fromRejected.body.message).toMatch(/spring_promo is REJECTED/);

    // Delete is refused while a campaign using the template is still fanning out (100 at 80/s: ~1.25 s).
    const rows = Array.from({ length: 100 }, (_, i) => ({
      phone: `1415556${String(i).padStart(4, '0')}`,
      BODY_1: `Name ${i}`,
      BODY_2: `B-${i}`,
    }));
    const campaign = await r.api('POST', '/v1/messaging/chat/campaigns', {
      token,
      body: { campaign_name: 'order_updates', template_name: 'order_update', audience_rows: rows },
    });
    expect(campaign.status, campaign.text).toBe(200);
    const campaignId = (campaign.body.campaign as { id: string }).id;
    const busy = await r.api('DELETE', '/v1/messaging/chat/templates/order_update', { token });
    expect(busy.status).toBe(409);
    expect(busy.body.error).toBe('conflict');
    expect(busy.body.message).toMatch(/in use by the active campaign order_updates/);
    for (const deadline = performance.now() + 10_000; performance.now() < deadline; ) {
      const s = await stats(r);
      if (s.sends.filter((x) => x.campaign_id === campaignId).length === 100) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    const done = await r.api('DELETE', '/v1/messaging/chat/templates/order_update', { token });
    expect(done.status, done.text).toBe(204);
    expect((await r.api('GET', '/v1/messaging/chat/templates/order_update', { token })).status).toBe(404);
    expect(await names('')).toEqual(['spring_promo']);

    // The name is never reusable.
    const again = await r.api('POST', '/v1/messaging/chat/templates', { token, body });
    expect(again.status).toBe(409);
    expect(again.body.message).toMatch(/Template already exists$/);
    console.log(
      `template lifecycle: approved after ${Math.round(approvedAfter)} ms (review delay ${REVIEW_MS} ms)`,
    );
  });
});

// ---------------------------------------------------------------------------------------------------

interface Case {
  /** What the case shows. */
  readonly rule: string;
  readonly method?: string;
  readonly path: string;
  readonly body?: unknown;
  readonly status?: number;
  /** The message, matched whole or by pattern: every one names the field (or is the document's own). */
  readonly message: string | RegExp;
  /** Checked by the bridge before any provider call: nothing may reach the emulator. */
  readonly local: boolean;
}

const CHAT_TEMPLATES = '/v1/messaging/chat/templates';
const CHAT_CAMPAIGNS = '/v1/messaging/chat/campaigns';
const RCS_TEMPLATES = '/v1/messaging/rcs/templates';
const RCS_CAMPAIGNS = '/v1/messaging/rcs/campaigns';
const VALID = chatTemplate('valid_name');
const x = (n: number) => 'x'.repeat(n);
const tpl = (patch: Record<string, unknown>) => ({ ...VALID, ...patch });
const withComponents = (...extra: unknown[]) => tpl({ components: [...VALID.components, ...extra] });
const rcsText = (patch: Record<string, unknown>) => ({
  template_name: 'rcs_promo',
  template_type: 'text',
  bot_name: 'Shop',
  text: 'Hello {{name}}',
  ...patch,
});
const cards = (n: number) => Array.from({ length: n }, (_, i) => ({ title: `Card ${i}` }));
const reply = (title: string, id = title) => ({ type: 'reply', reply: { id, title } });
const interactive = (buttons: unknown[]) => ({
  channel: 'chat',
  message: {
    type: 'interactive',
    interactive: { type: 'button', body: { text: 'Shall we call you back?' }, action: { buttons } },
  },
});
const chatCampaign = (patch: Record<string, unknown>) => ({
  campaign_name: 'spring_visits',
  template_name: 'visit_two',
  audience_rows: [{ phone: '14155550111', BODY_1: 'Ada', BODY_2: 'Monday' }],
  ...patch,
});

const CASES: Case[] = [
  // The chat document's own messages, word for word.
  // No body at all: the bridge's route refuses it before the template is looked at (the template is the
  // body there; the provider's own `templateData is required` is checked at the provider below).
  {
    rule: 'no template body',
    path: CHAT_TEMPLATES,
    message: 'the request body must be a JSON object, got nothing',
    local: true,
  },
  {
    rule: 'uppercase name',
    path: CHAT_TEMPLATES,
    body: tpl({ name: 'Order-Update' }),
    message: 'Template name invalid',
    local: true,
  },
  {
    rule: 'name with spaces',
    path: CHAT_TEMPLATES,
    body: tpl({ name: 'order update' }),
    message: 'Template name invalid',
    local: true,
  },
  {
    rule: 'bare language',
    path: CHAT_TEMPLATES,
    body: tpl({ language: 'en' }),
    message: 'Language format should be locale-specific',
    local: true,
  },
  {
    rule: 'no BODY',
    path: CHAT_TEMPLATES,
    body: tpl({ components: [{ type: 'FOOTER', text: 'Bye' }] }),
    message: 'BODY component is required',
    local: true,
  },
  {
    rule: 'no components',
    path: CHAT_TEMPLATES,
    body: tpl({ components: undefined }),
    message: 'BODY component is required',
    local: true,
  },
  {
    rule: 'lowercase category',
    path: CHAT_TEMPLATES,
    body: tpl({ category: 'utility' }),
    message: /^templateData\.category must be one of MARKETING, UTILITY, AUTHENTICATION, got "utility"$/,
    local: true,
  },
  {
    rule: 'account_id in a template',
    path: CHAT_TEMPLATES,
    body: tpl({ account_id: 'default' }),
    message: /^templateData\.account_id must not be sent/,
    local: true,
  },
  // Component limits.
  {
    rule: 'header 61 characters',
    path: CHAT_TEMPLATES,
    body: withComponents({ type: 'HEADER', format: 'TEXT', text: x(61) }),
    message: 'templateData.components[1].text must be at most 60 characters, got 61',
    local: true,
  },
  {
    rule: 'header with 2 variables',
    path: CHAT_TEMPLATES,
    body: tpl({
      components: [
        { type: 'HEADER', format: 'TEXT', text: '{{1}} {{2}}' },
        { type: 'BODY', text: 'Hi' },
      ],
      sample_values: { 1: 'a', 2: 'b' },
    }),
    message: 'templateData.components[0].text may hold at most 1 variable, got 2',
    local: true,
  },
  {
    rule: 'body 1,025 characters',
    path: CHAT_TEMPLATES,
    body: tpl({ components: [{ type: 'BODY', text: x(1025) }], sample_values: undefined }),
    message: 'templateData.components[0].text must be at most 1024 characters, got 1025',
    local: true,
  },
  {
    rule: 'body with 11 variables',
    path: CHAT_TEMPLATES,
    body: chatTemplate('valid_name', { vars: 11 }),
    message: 'templateData.components[0].text may hold at most 10 variables, got 11',
    local: true,
  },
  {
    rule: 'footer 61 characters',
    path: CHAT_TEMPLATES,
    body: withComponents({ type: 'FOOTER', text: x(61) }),
    message: 'templateData.components[1].text must be at most 60 characters, got 61',
    local: true,
  },
  {
    rule: 'footer with a variable',
    path: CHAT_TEMPLATES,
    body: withComponents({ type: 'FOOTER', text: 'Bye {{1}}' }),
    message: 'templateData.components[1].text may not hold variables, got 1',
    local: true,
  },
  {
    rule: 'two BODY components',
    path: CHAT_TEMPLATES,
    body: withComponents({ type: 'BODY', text: 'Again' }),
    message: /^templateData\.components may hold one BODY component, got a second at \[1\]$/,
    local: true,
  },
  {
    rule: '4 buttons',
    path: CHAT_TEMPLATES,
    body: withComponents({
      type: 'BUTTONS',
      buttons: ['A', 'B', 'C', 'D'].map((t) => ({ type: 'QUICK_REPLY', text: t })),
    }),
    message: 'templateData.components[1].buttons must hold 1 to 3 buttons, got 4',
    local: true,
  },
  {
    rule: 'button text 21 characters',
    path: CHAT_TEMPLATES,
    body: withComponents({ type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: x(21) }] }),
    message: 'templateData.components[1].buttons[0].text must be at most 20 characters, got 21',
    local: true,
  },
  {
    rule: 'URL button without url',
    path: CHAT_TEMPLATES,
    body: withComponents({ type: 'BUTTONS', buttons: [{ type: 'URL', text: 'Open' }] }),
    message: 'templateData.components[1].buttons[0].url is required',
    local: true,
  },
  // Variables: numbering and sample values.
  {
    rule: 'variables skip {{2}}',
    path: CHAT_TEMPLATES,
    body: tpl({
      components: [{ type: 'BODY', text: 'Hi {{1}} and {{3}}' }],
      sample_values: { 1: 'a', 3: 'c' },
    }),
    message:
      'templateData.components[0].text must number its variables consecutively from {{1}}: {{2}} is missing before {{3}}',
    local: true,
  },
  {
    rule: 'named variable',
    path: CHAT_TEMPLATES,
    body: tpl({ components: [{ type: 'BODY', text: 'Hi {{name}}' }] }),
    message: /^templateData\.components\[0\]\.text holds the variable \{\{name\}\}: variables are numbered/,
    local: true,
  },
  {
    rule: 'no sample values',
    path: CHAT_TEMPLATES,
    body: tpl({ sample_values: undefined }),
    message: /^templateData\.sample_values is required when the text holds variables/,
    local: true,
  },
  {
    rule: 'empty sample for {{2}}',
    path: CHAT_TEMPLATES,
    body: tpl({ components: [{ type: 'BODY', text: 'Hi {{1}} {{2}}' }], sample_values: { 1: 'a', 2: ' ' } }),
    message: /^templateData\.sample_values must give a non-empty sample for \{\{2\}\}/,
    local: true,
  },
  // Single sends from a live call.
  {
    rule: 'text 4,097 characters',
    path: sendPath('val-call'),
    body: { channel: 'chat', message: { type: 'text', text: { body: x(4097) } } },
    message: 'message.text.body must be at most 4096 characters, got 4097',
    local: true,
  },
  {
    rule: 'interactive without buttons',
    path: sendPath('val-call'),
    body: interactive([]),
    message: 'message.interactive.action.buttons must hold 1 to 3 buttons, got 0',
    local: true,
  },
  {
    rule: 'interactive with 4 buttons',
    path: sendPath('val-call'),
    body: interactive(['a', 'b', 'c', 'd'].map((t) => reply(t))),
    message: 'message.interactive.action.buttons must hold 1 to 3 buttons, got 4',
    local: true,
  },
  {
    rule: 'interactive title 21 characters',
    path: sendPath('val-call'),
    body: interactive([reply(x(21), 'long')]),
    message: 'message.interactive.action.buttons[0].reply.title must be at most 20 characters, got 21',
    local: true,
  },
  {
    rule: 'image that is not JPEG or PNG',
    path: sendPath('val-call'),
    body: { channel: 'chat', message: { type: 'image', image: { link: 'https://cdn.example/a.gif' } } },
    message: /^message\.image\.link must be a JPEG or PNG URL/,
    local: true,
  },
  {
    rule: 'template language without locale',
    path: sendPath('val-call'),
    body: { channel: 'chat', template: { name: 'visit_two', language: 'en' } },
    message: 'template.language must be a locale like en_US, got "en"',
    local: true,
  },
  {
    rule: 'customer_phone without country code',
    path: sendPath('val-call-10'),
    body: { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } },
    message:
      /^the session's customer_phone must be a number with its country code \(11 to 15 digits, "\+" allowed\) to be messaged, got 10 digits$/,
    local: true,
  },
  // Campaigns: phone format, rows, BODY_n against the template (the provider's check: it holds the template).
  {
    rule: 'campaign phone with +',
    path: CHAT_CAMPAIGNS,
    body: chatCampaign({ audience_rows: [{ phone: '+14155550111', BODY_1: 'a', BODY_2: 'b' }] }),
    message: 'audience_rows[0].phone must be digits only: no "+", got "+14155550111"',
    local: true,
  },
  {
    rule: 'campaign phone with spaces',
    path: CHAT_CAMPAIGNS,
    body: chatCampaign({ audience_rows: [{ phone: '1 415 555 0111', BODY_1: 'a', BODY_2: 'b' }] }),
    message: 'audience_rows[0].phone must be digits only: no spaces, got "1 415 555 0111"',
    local: true,
  },
  {
    rule: 'campaign phone without country code',
    path: CHAT_CAMPAIGNS,
    body: chatCampaign({ audience_rows: [{ phone: '4155550111', BODY_1: 'a', BODY_2: 'b' }] }),
    message: /^audience_rows\[0\]\.phone is missing its country code/,
    local: true,
  },
  {
    rule: 'campaign without rows',
    path: CHAT_CAMPAIGNS,
    body: chatCampaign({ audience_rows: [] }),
    message: 'audience_rows is required: at least one recipient',
    local: true,
  },
  {
    rule: 'campaign without template_name',
    path: CHAT_CAMPAIGNS,
    body: chatCampaign({ template_name: undefined }),
    message: 'template_name is required',
    local: true,
  },
  {
    rule: 'campaign name with a hyphen',
    path: CHAT_CAMPAIGNS,
    body: chatCampaign({ campaign_name: 'spring-visits' }),
    message: 'campaign_name must be lowercase words joined by underscores, got "spring-visits"',
    local: true,
  },
  {
    rule: 'row key that is not BODY_n',
    path: CHAT_CAMPAIGNS,
    body: chatCampaign({ audience_rows: [{ phone: '14155550111', NAME: 'a' }] }),
    message: 'audience_rows[0] may hold only phone and BODY_1, BODY_2, ...; got NAME',
    local: true,
  },
  {
    rule: 'BODY_n not consecutive',
    path: CHAT_CAMPAIGNS,
    body: chatCampaign({ audience_rows: [{ phone: '14155550111', BODY_1: 'a', BODY_3: 'c' }] }),
    message: /audience_rows\[0\] is missing BODY_2: the template's body has 2 variables/,
    local: false,
  },
  {
    rule: 'BODY_n beyond the template',
    path: CHAT_CAMPAIGNS,
    body: chatCampaign({ audience_rows: [{ phone: '14155550111', BODY_1: 'a', BODY_2: 'b', BODY_3: 'c' }] }),
    message: /audience_rows\[0\] holds BODY_3, but the template's body has only 2 variables/,
    local: false,
  },
  // RCS templates: carousel size, suggestion rules per type.
  {
    rule: 'carousel of 1 card',
    path: RCS_TEMPLATES,
    body: rcsText({ template_type: 'carousel', text: undefined, cards: cards(1) }),
    message: 'cards must hold 2 to 10 cards, got 1',
    local: true,
  },
  {
    rule: 'carousel of 11 cards',
    path: RCS_TEMPLATES,
    body: rcsText({ template_type: 'carousel', text: undefined, cards: cards(11) }),
    message: 'cards must hold 2 to 10 cards, got 11',
    local: true,
  },
  {
    rule: 'reply without postback',
    path: RCS_TEMPLATES,
    body: rcsText({ suggestions: [{ type: 'reply', label: 'Yes' }] }),
    message: 'suggestions[0].postback is required',
    local: true,
  },
  {
    rule: 'url without url',
    path: RCS_TEMPLATES,
    body: rcsText({ suggestions: [{ type: 'url', label: 'Open' }] }),
    message: 'suggestions[0].url is required',
    local: true,
  },
  {
    rule: 'phone not E.164',
    path: RCS_TEMPLATES,
    body: rcsText({ suggestions: [{ type: 'phone', label: 'Call', phone: '4155550100' }] }),
    message: 'suggestions[0].phone must be an E.164 number like +14155550100, got "4155550100"',
    local: true,
  },
  {
    rule: 'unknown suggestion type',
    path: RCS_TEMPLATES,
    body: rcsText({ suggestions: [{ type: 'call', label: 'Call' }] }),
    message: 'suggestions[0].type must be one of reply, url, phone, got "call"',
    local: true,
  },
  {
    rule: 'reply on a standalone card',
    path: RCS_TEMPLATES,
    body: rcsText({
      template_type: 'standalone',
      text: undefined,
      title: 'Hi',
      suggestions: [{ type: 'reply', label: 'Yes', postback: 'yes' }],
    }),
    message: 'suggestions[0].type must be one of url, phone, got "reply"',
    local: true,
  },
  {
    rule: 'phone on a carousel card',
    path: RCS_TEMPLATES,
    body: rcsText({
      template_type: 'carousel',
      text: undefined,
      cards: [
        { title: 'A', suggestions: [{ type: 'phone', label: 'Call', phone: '+14155550100' }] },
        { title: 'B' },
      ],
    }),
    message: 'cards[0].suggestions[0].type must be one of url, reply, got "phone"',
    local: true,
  },
  {
    rule: 'RCS name with spaces',
    path: RCS_TEMPLATES,
    body: rcsText({ template_name: 'rcs promo' }),
    message: 'template_name must be a name without spaces, got "rcs promo"',
    local: true,
  },
  {
    rule: 'RCS action other than create_template',
    path: RCS_TEMPLATES,
    body: rcsText({ action: 'delete' }),
    message: 'action must be create_template, got "delete"',
    local: true,
  },
  // RCS campaigns: 10-digit mobiles, params against the template.
  {
    rule: 'mobile of 11 digits',
    path: RCS_CAMPAIGNS,
    body: { template_name: 'rcs_known', campaign_name: 'rcs_run', contacts: [{ mobile: '14155550100' }] },
    message: 'contacts[0].mobile must be exactly 10 digits, got "14155550100"',
    local: true,
  },
  {
    rule: 'mobile with +',
    path: RCS_CAMPAIGNS,
    body: { template_name: 'rcs_known', campaign_name: 'rcs_run', contacts: [{ mobile: '+415555010' }] },
    message: 'contacts[0].mobile must be exactly 10 digits, got "+415555010"',
    local: true,
  },
  {
    rule: 'no contacts',
    path: RCS_CAMPAIGNS,
    body: { template_name: 'rcs_known', campaign_name: 'rcs_run', contacts: [] },
    message: 'contacts is required: at least one contact',
    local: true,
  },
  {
    rule: 'params the template lacks',
    path: RCS_CAMPAIGNS,
    body: {
      template_name: 'rcs_known',
      campaign_name: 'rcs_run',
      contacts: [{ mobile: '4155550100', params: { name: 'Ada', city: 'Rome' } }],
    },
    message: /contacts\[0\]\.params\.city is not a variable of the template \(it uses \{\{name\}\}\)/,
    local: false,
  },
];

describe('2. every validation rule reaches the caller as a 400 naming the field', () => {
  it('a representative bad body per rule group; the locally checked ones never reach the emulator', async () => {
    const r = await rig({ messaging: { reviewDelayMs: -1, deliveryDelayMs: 20, readDelayMs: -1 } });
    const token = await r.token();
    await r.liveCall('val-call', '+14155550102');
    await r.liveCall('val-call-10', '4155550103');
    // What the provider-checked cases refer to: an approved two-variable template, an RCS template.
    await approvedTemplate(r, token, chatTemplate('visit_two', { vars: 2 }));
    const rcs = await r.api('POST', RCS_TEMPLATES, {
      token,
      body: rcsText({ template_name: 'rcs_known' }),
    });
    expect(rcs.status, rcs.text).toBe(201);

    const sendsBefore = (await stats(r)).sends.length;
    for (const c of CASES) {
      const before = r.upstream.length;
      const a = await r.api(c.method ?? 'POST', c.path, {
        token,
        ...(c.body === undefined ? {} : { body: c.body }),
      });
      expect(a.status, `${c.rule}: ${a.text}`).toBe(c.status ?? 400);
      const message = a.body.message as string;
      if (typeof c.message === 'string') {
        // The provider's refusals pass through behind the call they refused.
        expect(message, c.rule).toBe(c.local ? c.message : expect.stringContaining(c.message));
      } else {
        expect(message, c.rule).toMatch(c.message);
      }
      if (c.local) expect(r.upstream.slice(before), `${c.rule} reached the emulator`).toEqual([]);
      else expect(r.upstream.length, `${c.rule} was checked by the provider`).toBe(before + 1);
    }
    // Nothing was sent by any of them.
    expect((await stats(r)).sends.length).toBe(sendsBefore);

    // The duplicate name is the provider's refusal (409), with the document's message.
    const before = r.upstream.length;
    const dup = await r.api('POST', CHAT_TEMPLATES, { token, body: chatTemplate('visit_two', { vars: 2 }) });
    expect(dup.status).toBe(409);
    expect(dup.body.message).toBe(
      'provider chat template create refused a duplicate (409): Template already exists',
    );
    expect(r.upstream.length).toBe(before + 1);

    // `action is required` and `templateData is required` at the provider's own template manager (the
    // bridge's routes always send an action and wrap the template themselves).
    const manager = async (body: unknown) => {
      const res = await fetch(`${r.emulatorUrl}/v1/chat_template_manager`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${r.emulator.messaging.defaultApiKey}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as { error: string } };
    };
    expect(await manager({ templateData: VALID })).toEqual({
      status: 400,
      body: expect.objectContaining({ error: 'action is required' }),
    });
    expect(await manager({ action: 'create', name: 'valid_name' })).toEqual({
      status: 400,
      body: expect.objectContaining({ error: 'templateData is required' }),
    });
    console.log(
      `validation: ${CASES.length} cases, ${CASES.filter((c) => c.local).length} refused by the bridge before any provider call`,
    );
  });
});
