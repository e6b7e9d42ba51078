/**
 * The message stores, in memory and on a real Redis: events deduplicated as they are stored, status by
 * rank, events that outrun the send's answer, RCS sends and campaign recipients adopting their message
 * id (only by a first event, stamped after the send, within the pending send's life), RCS recipients
 * reserved for one call's send at a time, saved campaigns, retention and the memory caps.
 */
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log.js';
import type {
  CampaignSends,
  MessageStore,
  PendingRcsSend,
  SentMessage,
} from '../../src/messaging/records.js';
import {
  ADOPTION_RULE,
  CLOCK_SKEW_MS,
  eventNumber,
  nextStatus,
  PENDING_TTL_MS,
  rcsMobile,
  recipientOf,
} from '../../src/messaging/rules.js';
import { MemoryMessageStore } from '../../src/messaging/store-memory.js';
import { RedisMessageStore } from '../../src/messaging/store-redis.js';
import type { MessagingEvent } from '../../src/messaging/types.js';
import { RedisLink } from '../../src/state/redis-link.js';
import { createStoreMetrics } from '../../src/state/store-metrics.js';
import { redisSkipReason, type TestRedis, useRedis } from '../helpers/redis.js';

const skip = redisSkipReason('messaging/store.test.ts');

const HOUR = 3_600_000;
/** A campaign recorded with nothing adopted at once and nothing skipped. */
const NONE = { adopted: [], skipped: 0 };

const sent = (id: string, o: Partial<SentMessage> = {}): SentMessage => ({
  message_id: id,
  tenant: 'default',
  channel: 'chat',
  session_id: 'call-1',
  to: '15550100',
  kind: 'text',
  sent_at: new Date().toISOString(),
  ...o,
});

const status = (
  id: string,
  s: 'sent' | 'delivered' | 'read' | 'failed',
  o: { channel?: 'chat' | 'rcs'; recipient?: string; at?: number } = {},
): MessagingEvent => ({
  kind: 'status',
  channel: o.channel ?? 'chat',
  message_id: id,
  status: s,
  recipient: o.recipient ?? '15550100',
  timestamp: new Date(o.at ?? Date.now()).toISOString(),
});

const button = (id: string, from: string, channel: 'chat' | 'rcs' = 'rcs'): MessagingEvent => ({
  kind: 'button',
  channel,
  message_id: id,
  from,
  button_id: 'track',
  button_text: 'Track',
  timestamp: new Date().toISOString(),
});

/** Adds an event as the webhook does (RCS numbers of country code 91); answers the whole outcome. */
const addEvent = (store: MessageStore, ev: MessagingEvent) =>
  store.addEvent(ev, recipientOf(ev.channel, eventNumber(ev), '91'));

/** The same, answering the record only. */
const add = async (store: MessageStore, ev: MessagingEvent) => (await addEvent(store, ev)).record;

const pending = (mobile: string, campaign: string, o: Partial<PendingRcsSend> = {}): PendingRcsSend => ({
  tenant: 'default',
  session_id: 'call-1',
  to: mobile,
  kind: 'rcs_template',
  sent_at: new Date().toISOString(),
  campaign_id: campaign,
  requested_at_ms: Date.now(),
  ...o,
});

const campaign = (id: string, recipients: string[], o: Partial<CampaignSends> = {}): CampaignSends => ({
  tenant: 'acme',
  channel: 'chat',
  campaign_id: id,
  recipients,
  sent_at: new Date().toISOString(),
  requested_at_ms: Date.now(),
  ...o,
});

/** Every row of the adoption rule (rules.ts), for a call's RCS send and a chat campaign's recipient. */
function adoptionRule(make: () => Promise<{ a: MessageStore; b: MessageStore }>): void {
  it.each(ADOPTION_RULE.map((row, i) => ({ ...row, i })))(
    'adoption rule $i: $event after [$after] stamped $stampedMs ms from the ask adopts: $adopts',
    async (row) => {
      const { a, b } = await make();
      for (const channel of ['rcs', 'chat'] as const) {
        const number =
          channel === 'rcs'
            ? `70000000${String(row.i).padStart(2, '0')}`
            : `1415555${String(row.i).padStart(4, '0')}`;
        const id = `adopt-${channel}-${row.i}-${Date.now()}`;
        const requested = Date.now();
        const at = new Date(requested + row.stampedMs).toISOString();
        if (channel === 'rcs') {
          expect(
            await b.recordPendingRcs(pending(number, `camp-a${row.i}`, { requested_at_ms: requested })),
          ).toBeUndefined();
        } else {
          const out = await b.recordCampaign(
            campaign(`camp-c${row.i}`, [number], { requested_at_ms: requested }),
          );
          expect(out).toEqual(NONE);
        }
        for (const s of row.after) await add(a, status(id, s, { channel, recipient: number, at: requested }));
        const ev =
          row.event === 'button'
            ? { ...button(id, number, channel), timestamp: at }
            : { ...status(id, row.event, { channel, recipient: number }), timestamp: at };
        const rec = await add(a, ev);
        expect(rec?.message_id === id, `${channel}: ${JSON.stringify(rec)}`).toBe(row.adopts);
      }
    },
  );
}

/** The behaviour both stores share. */
function sharedCases(name: string, make: () => Promise<{ a: MessageStore; b: MessageStore }>): void {
  describe(name, () => {
    adoptionRule(make);
    it('an event is fresh once, also across two stores sharing the state; it is stored with its dedupe key', async () => {
      const { a, b } = await make();
      await a.recordSent(sent('m-d'));
      const ev = status('m-d', 'delivered');
      const results = await Promise.all([addEvent(a, ev), addEvent(b, ev), addEvent(a, ev)]);
      expect(results.map((r) => r.fresh).filter((f) => f)).toHaveLength(1);
      // The fresh one is on the record, once; the duplicates changed nothing.
      const fresh = results.find((r) => r.fresh)!;
      expect(fresh.record?.events).toHaveLength(1);
      expect(fresh.added).toEqual([ev]);
      expect(results.filter((r) => !r.fresh)).toEqual([
        { fresh: false, record: undefined, added: [] },
        { fresh: false, record: undefined, added: [] },
      ]);
      expect((await b.get('default', 'm-d'))?.events).toHaveLength(1);
      // Another status of the message, and the same status of an unknown message (held): fresh.
      expect((await addEvent(b, status('m-d', 'read'))).fresh).toBe(true);
      expect(await addEvent(a, status('m-unknown', 'read'))).toEqual({
        fresh: true,
        record: undefined,
        added: [],
      });
      expect((await addEvent(b, status('m-unknown', 'read'))).fresh).toBe(false);
      // A button tapped again later is another event; the same tap posted twice is one.
      const tap = button('m-d', '15550100', 'chat');
      expect((await addEvent(a, tap)).fresh).toBe(true);
      expect((await addEvent(b, tap)).fresh).toBe(false);
      expect(
        (await addEvent(b, { ...tap, timestamp: new Date(Date.now() + 1_000).toISOString() })).fresh,
      ).toBe(true);
    });

    it('status by rank: sent < delivered < read, failed wins; events kept in order', async () => {
      const { a, b } = await make();
      await a.recordSent(sent('m-1'));
      await add(b, status('m-1', 'read'));
      const r = await add(a, status('m-1', 'delivered'));
      expect(r?.status).toBe('read');
      expect(r?.events.map((e) => (e.kind === 'status' ? e.status : ''))).toEqual(['read', 'delivered']);
      const f = await add(b, status('m-1', 'failed'));
      expect(f?.status).toBe('failed');
      expect((await add(a, status('m-1', 'sent')))?.status).toBe('failed');
      // The same read again: a duplicate, not added.
      expect(await addEvent(a, status('m-1', 'read'))).toMatchObject({ fresh: false, record: undefined });
      expect((await b.get('default', 'm-1'))?.events).toHaveLength(4);
    });

    it('events that arrive before the send is recorded are adopted by it', async () => {
      const { a, b } = await make();
      expect(await add(a, status('m-early', 'sent'))).toBeUndefined();
      expect(await add(a, status('m-early', 'delivered'))).toBeUndefined();
      const rec = await b.recordSent(sent('m-early', { session_id: 'call-9' }));
      expect(rec).toMatchObject({ message_id: 'm-early', session_id: 'call-9', status: 'delivered' });
      expect(rec.events).toHaveLength(2);
    });

    it('a record is visible to its tenant only', async () => {
      const { a, b } = await make();
      await a.recordSent(sent('m-t', { tenant: 'acme' }));
      expect(await b.get('acme', 'm-t')).toMatchObject({ message_id: 'm-t', tenant: 'acme', status: 'sent' });
      expect(await b.get('default', 'm-t')).toBeUndefined();
      expect(await b.get('acme', 'nope')).toBeUndefined();
    });

    it('an RCS send adopts the message id of the first event for its 10 digits, oldest send first', async () => {
      const { a, b } = await make();
      expect(await a.recordPendingRcs(pending('9876543210', 'camp-1'))).toBeUndefined();
      expect(
        await b.recordPendingRcs(pending('9876543210', 'camp-2', { session_id: 'call-2' })),
      ).toBeUndefined();
      // The recipient as the webhook writes it may carry the country code.
      const first = await add(b, status('rcs-a', 'sent', { channel: 'rcs', recipient: '+919876543210' }));
      expect(first).toMatchObject({
        message_id: 'rcs-a',
        channel: 'rcs',
        campaign_id: 'camp-1',
        session_id: 'call-1',
        to: '9876543210',
        status: 'sent',
      });
      // The same message again: its record, not the next send.
      expect((await add(a, status('rcs-a', 'delivered', { channel: 'rcs' })))?.campaign_id).toBe('camp-1');
      const second = await add(a, status('rcs-b', 'sent', { channel: 'rcs', recipient: '9876543210' }));
      expect(second).toMatchObject({ message_id: 'rcs-b', campaign_id: 'camp-2', session_id: 'call-2' });
      // No send left for that number: held as an orphan.
      expect(
        await add(a, status('rcs-c', 'sent', { channel: 'rcs', recipient: '9876543210' })),
      ).toBeUndefined();
      expect((await a.get('default', 'rcs-a'))?.status).toBe('delivered');
    });

    it('an RCS event that outruns the launcher answer is adopted, one from before the launch is not', async () => {
      const { a, b } = await make();
      const before = Date.now() - 5_000;
      await add(a, status('rcs-late', 'sent', { channel: 'rcs', recipient: '1112223334' }));
      await add(a, status('rcs-late', 'delivered', { channel: 'rcs', recipient: '1112223334' }));
      const rec = await b.recordPendingRcs(pending('1112223334', 'camp-3', { requested_at_ms: before }));
      expect(rec).toMatchObject({ message_id: 'rcs-late', campaign_id: 'camp-3', status: 'delivered' });
      expect(rec?.events).toHaveLength(2);
      // Arrived (and stamped) more than the clock skew before the launch was asked for: not this send's.
      await add(a, status('rcs-old', 'sent', { channel: 'rcs', recipient: '5556667778' }));
      const later = await b.recordPendingRcs(
        pending('5556667778', 'camp-4', { requested_at_ms: Date.now() + CLOCK_SKEW_MS + 1_000 }),
      );
      expect(later).toBeUndefined();
      // A held delivered (its sent never came) is no first event: no send adopts it.
      await add(a, status('rcs-mid', 'delivered', { channel: 'rcs', recipient: '5556667779' }));
      expect(
        await b.recordPendingRcs(pending('5556667779', 'camp-5', { requested_at_ms: before })),
      ).toBeUndefined();
    });

    it("tenant B's RCS send to a number tenant A's send is waiting on is refused; A's events stay A's", async () => {
      const { a, b } = await make();
      const mobile = '9876543211';
      const ra = await a.reserveRcs(mobile);
      expect(ra).toEqual(expect.any(String));
      // Being launched: held for A.
      expect(await b.reserveRcs(mobile)).toBeUndefined();
      expect(
        await a.recordPendingRcs(pending(mobile, 'camp-a', { tenant: 'tenant-a', session_id: 'call-a' }), ra),
      ).toBeUndefined();
      // Waiting for its first event: still held, for any tenant.
      expect(await b.reserveRcs(mobile)).toBeUndefined();
      // A button tap of some other message to the number is no first event: held, A's send not taken.
      expect(await add(b, button('rcs-other', `91${mobile}`))).toBeUndefined();
      const first = await add(b, status('rcs-a', 'sent', { channel: 'rcs', recipient: `+91${mobile}` }));
      expect(first).toMatchObject({ tenant: 'tenant-a', session_id: 'call-a', campaign_id: 'camp-a' });
      // A's send has its message: the number is free again.
      const rb = await b.reserveRcs(mobile);
      expect(rb).toEqual(expect.any(String));
      // A launch that failed gives its reservation back; another's id ends nothing.
      await b.releaseRcs(mobile, 'not-the-id');
      expect(await a.reserveRcs(mobile)).toBeUndefined();
      await b.releaseRcs(mobile, rb!);
      expect(await a.reserveRcs(mobile)).toEqual(expect.any(String));
    });

    it("an RCS campaign's send and a call's never wait on one number together", async () => {
      const { a, b } = await make();
      // A campaign's send waiting for a number holds it against a call's (of any tenant).
      await a.recordCampaign(campaign('cmp-n', ['9876543212'], { channel: 'rcs' }));
      expect(await b.reserveRcs('9876543212')).toBeUndefined();
      // A chat campaign to the same digits does not.
      await a.recordCampaign(campaign('cmp-c', ['9876543219']));
      expect(await b.reserveRcs('9876543219')).toEqual(expect.any(String));
      // A campaign skips (and counts) the numbers a call's send holds: reserved, or waiting.
      const r = await b.reserveRcs('9876543216');
      expect(r).toEqual(expect.any(String));
      await b.recordPendingRcs(pending('9876543217', 'camp-call', { tenant: 'tenant-a' }));
      const out = await a.recordCampaign(
        campaign('cmp-k', ['9876543215', '9876543216', '9876543217', '9876543218'], { channel: 'rcs' }),
      );
      expect(out).toEqual({ adopted: [], skipped: 2 });
      // The call's send takes its message; the campaign's send to the number is none.
      expect(
        await add(b, status('rcs-k7', 'sent', { channel: 'rcs', recipient: '9876543217' })),
      ).toMatchObject({
        tenant: 'tenant-a',
        campaign_id: 'camp-call',
      });
      expect(
        await add(b, status('rcs-k7b', 'sent', { channel: 'rcs', recipient: '9876543217' })),
      ).toBeUndefined();
      expect(
        (await add(a, status('rcs-k8', 'sent', { channel: 'rcs', recipient: '9876543218' })))?.campaign_id,
      ).toBe('cmp-k');
    });

    it('only a first event (sent) stamped no earlier than the send adopts it; later ones join it', async () => {
      const { a, b } = await make();
      const mobile = '9876543213';
      const asked = Date.now();
      await a.recordPendingRcs(pending(mobile, 'camp-f', { requested_at_ms: asked }));
      // A delivered or a button tap before any sent: never adopted.
      expect(
        await add(b, status('rcs-f', 'delivered', { channel: 'rcs', recipient: mobile })),
      ).toBeUndefined();
      expect(await add(b, button('rcs-g', mobile))).toBeUndefined();
      expect(await add(a, status('rcs-g', 'read', { channel: 'rcs', recipient: mobile }))).toBeUndefined();
      // A sent stamped before the send was asked for (beyond the skew): another message.
      expect(
        await add(
          a,
          status('rcs-e', 'sent', { channel: 'rcs', recipient: mobile, at: asked - CLOCK_SKEW_MS - 1_000 }),
        ),
      ).toBeUndefined();
      // Its sent, stamped within the skew: adopted, with its delivered that came first.
      const got = await addEvent(
        b,
        status('rcs-f', 'sent', { channel: 'rcs', recipient: mobile, at: asked - CLOCK_SKEW_MS + 1_000 }),
      );
      expect(got.record).toMatchObject({ message_id: 'rcs-f', campaign_id: 'camp-f', status: 'delivered' });
      expect(got.added.map((e) => (e.kind === 'status' ? e.status : e.kind))).toEqual(['delivered', 'sent']);
      expect(await a.get('default', 'rcs-g')).toBeUndefined();
      expect(await a.get('default', 'rcs-e')).toBeUndefined();
    });

    it('a failed that is the first event of its message adopts a pending send (same time rule); one after another event does not', async () => {
      const { a, b } = await make();
      const asked = Date.now();
      // Refused at once: the message's only event is its failed.
      await a.recordPendingRcs(pending('9876543240', 'camp-bad', { requested_at_ms: asked }));
      const got = await add(b, status('rcs-bad', 'failed', { channel: 'rcs', recipient: '9876543240' }));
      expect(got).toMatchObject({ message_id: 'rcs-bad', campaign_id: 'camp-bad', status: 'failed' });
      // A failed that outruns the launcher's answer is adopted when the send is recorded.
      expect(
        await add(b, status('rcs-early', 'failed', { channel: 'rcs', recipient: '9876543241' })),
      ).toBeUndefined();
      expect(
        await a.recordPendingRcs(pending('9876543241', 'camp-early', { requested_at_ms: asked })),
      ).toMatchObject({ message_id: 'rcs-early', status: 'failed' });
      // A failed after its message's delivered (seen, not adopted) is not a first event.
      await a.recordPendingRcs(pending('9876543242', 'camp-late', { requested_at_ms: asked }));
      expect(
        await add(b, status('rcs-late', 'delivered', { channel: 'rcs', recipient: '9876543242' })),
      ).toBeUndefined();
      expect(
        await add(b, status('rcs-late', 'failed', { channel: 'rcs', recipient: '9876543242' })),
      ).toBeUndefined();
      // Nor is one stamped before the send was asked for (beyond the skew).
      expect(
        await add(
          a,
          status('rcs-old', 'failed', {
            channel: 'rcs',
            recipient: '9876543242',
            at: asked - CLOCK_SKEW_MS - 1_000,
          }),
        ),
      ).toBeUndefined();
      // The send still waits for its own first event.
      expect(
        (await add(b, status('rcs-own', 'sent', { channel: 'rcs', recipient: '9876543242' })))?.campaign_id,
      ).toBe('camp-late');
    });

    it('a pending send expires after PENDING_TTL_MS: a sent that comes later adopts nothing', async () => {
      const { a, b } = await make();
      vi.useFakeTimers({ toFake: ['Date'] });
      try {
        const t0 = Date.now();
        await a.recordPendingRcs(pending('9876543214', 'camp-x', { requested_at_ms: t0 }));
        await a.recordCampaign(campaign('cmp-x', ['14155550901'], { requested_at_ms: t0 }));
        vi.setSystemTime(t0 + PENDING_TTL_MS + 2_000);
        expect(
          await add(b, status('rcs-x', 'sent', { channel: 'rcs', recipient: '9876543214' })),
        ).toBeUndefined();
        expect(await add(b, status('wamid.x', 'sent', { recipient: '14155550901' }))).toBeUndefined();
        // Nor does the number stay held.
        expect(await b.reserveRcs('9876543214')).toEqual(expect.any(String));
      } finally {
        vi.useRealTimers();
      }
    });

    it('a campaign records a send per recipient: events adopt them by channel and recipient, oldest first', async () => {
      const { a, b } = await make();
      expect(await a.recordCampaign(campaign('cmp-1', ['14155550101', '14155550102']))).toEqual(NONE);
      expect(await b.recordCampaign(campaign('cmp-2', ['14155550101']))).toEqual(NONE);
      // The same digits on RCS are another recipient.
      expect(
        await add(b, status('rcs-z', 'sent', { channel: 'rcs', recipient: '14155550101' })),
      ).toBeUndefined();
      const first = await add(b, status('wamid.1', 'sent', { recipient: '14155550101' }));
      expect(first).toEqual({
        message_id: 'wamid.1',
        tenant: 'acme',
        channel: 'chat',
        to: '14155550101',
        kind: 'campaign',
        sent_at: expect.any(String),
        campaign_id: 'cmp-1',
        status: 'sent',
        events: [expect.objectContaining({ message_id: 'wamid.1', status: 'sent' })],
      });
      expect((await add(a, status('wamid.1', 'delivered', { recipient: '14155550101' })))?.status).toBe(
        'delivered',
      );
      expect((await add(a, status('wamid.2', 'sent', { recipient: '14155550101' })))?.campaign_id).toBe(
        'cmp-2',
      );
      // Its delivered before its sent: held, then adopted with it.
      expect(await add(b, status('wamid.3', 'delivered', { recipient: '14155550102' }))).toBeUndefined();
      expect((await add(b, status('wamid.3', 'sent', { recipient: '14155550102' })))?.campaign_id).toBe(
        'cmp-1',
      );
      // Every recipient's send has its message: a further one is held as an orphan.
      expect(await add(a, status('wamid.4', 'sent', { recipient: '14155550101' }))).toBeUndefined();
      expect(await a.get('acme', 'wamid.1')).toMatchObject({ status: 'delivered', kind: 'campaign' });
      expect(await a.get('default', 'wamid.1')).toBeUndefined();
      expect(await a.get('acme', 'wamid.3')).toMatchObject({ status: 'delivered', kind: 'campaign' });
      // RCS campaigns match the 10-digit mobile, with the country code or without.
      await a.recordCampaign(campaign('cmp-r', ['9876500001', '5123456789'], { channel: 'rcs' }));
      expect(
        await add(b, status('rcs-1', 'sent', { channel: 'rcs', recipient: '+919876500001' })),
      ).toMatchObject({ channel: 'rcs', campaign_id: 'cmp-r', to: '9876500001', status: 'sent' });
      // A number of another country is not the mobile its last 10 digits spell.
      expect(
        await add(b, status('rcs-2', 'sent', { channel: 'rcs', recipient: '+49 151 23456789' })),
      ).toBeUndefined();
      expect(
        await add(b, status('rcs-3', 'sent', { channel: 'rcs', recipient: '5123456789' })),
      ).toMatchObject({
        to: '5123456789',
      });
    });

    it('an event that outruns the launch answer is adopted by the campaign, one from before the launch is not', async () => {
      const { a, b } = await make();
      const before = Date.now() - 5_000;
      await add(a, status('wamid.early', 'sent', { recipient: '14155550201' }));
      await add(a, status('wamid.early', 'delivered', { recipient: '14155550201' }));
      const { adopted } = await b.recordCampaign(
        campaign('cmp-e', ['14155550201', '14155550202'], { requested_at_ms: before }),
      );
      expect(adopted).toHaveLength(1);
      expect(adopted[0]).toMatchObject({
        message_id: 'wamid.early',
        campaign_id: 'cmp-e',
        kind: 'campaign',
        status: 'delivered',
      });
      expect(adopted[0]?.events).toHaveLength(2);
      await add(a, status('wamid.old', 'sent', { recipient: '14155550203' }));
      expect(
        await b.recordCampaign(
          campaign('cmp-l', ['14155550203'], { requested_at_ms: Date.now() + CLOCK_SKEW_MS + 1_000 }),
        ),
      ).toEqual(NONE);
      // The other recipient's send still waits for its event.
      expect((await add(a, status('wamid.next', 'sent', { recipient: '14155550202' })))?.campaign_id).toBe(
        'cmp-e',
      );
    });

    it("a call's chat message whose first event a campaign send took is the call's once its answer names it", async () => {
      const { a, b } = await make();
      await a.recordCampaign(campaign('cmp-race', ['14155550801'], { tenant: 'default' }));
      // The call's message's event outruns the sender's answer and is taken for the campaign's.
      expect((await add(b, status('wamid.call', 'sent', { recipient: '14155550801' })))?.campaign_id).toBe(
        'cmp-race',
      );
      const rec = await a.recordSent(sent('wamid.call', { to: '14155550801', session_id: 'call-7' }));
      expect(rec).toMatchObject({
        message_id: 'wamid.call',
        session_id: 'call-7',
        kind: 'text',
        status: 'sent',
      });
      expect(rec.campaign_id).toBeUndefined();
      expect(rec.events).toHaveLength(1);
      // The campaign's own message then finds its send waiting.
      expect(await add(b, status('wamid.camp', 'sent', { recipient: '14155550801' }))).toMatchObject({
        campaign_id: 'cmp-race',
        kind: 'campaign',
        status: 'sent',
      });
      expect((await b.get('default', 'wamid.call'))?.session_id).toBe('call-7');
    });

    it("a campaign send given back by a call's chat message adopts its own message held meanwhile, not a later one", async () => {
      const { a, b } = await make();
      const to = '14155550802';
      const asked = Date.now();
      await a.recordCampaign(campaign('cmp-back', [to], { tenant: 'tenant-b', requested_at_ms: asked }));
      // The call's message's first event is taken for the campaign's send; the campaign's own first
      // event, with no send waiting, is held.
      expect(
        (await add(b, status('wamid.c1', 'sent', { recipient: to, at: asked + 100 })))?.campaign_id,
      ).toBe('cmp-back');
      expect(await add(b, status('wamid.k1', 'sent', { recipient: to, at: asked + 200 }))).toBeUndefined();
      await a.recordSent(sent('wamid.c1', { tenant: 'tenant-a', to, session_id: 'call-8' }));
      // The campaign's send took its own message at once.
      expect(await b.get('tenant-b', 'wamid.k1')).toMatchObject({
        campaign_id: 'cmp-back',
        kind: 'campaign',
      });
      expect((await b.get('tenant-a', 'wamid.c1'))?.session_id).toBe('call-8');
      // Nothing is left waiting: a later message to the number is no one's.
      expect(await add(b, status('wamid.z1', 'sent', { recipient: to, at: asked + 300 }))).toBeUndefined();
    });

    it('a campaign send given back keeps the time its launch was asked for', async () => {
      const { a, b } = await make();
      const to = '14155550803';
      const asked = Date.now();
      await a.recordCampaign(campaign('cmp-age', [to], { tenant: 'tenant-b', requested_at_ms: asked }));
      expect((await add(b, status('wamid.c2', 'sent', { recipient: to, at: asked })))?.campaign_id).toBe(
        'cmp-age',
      );
      await a.recordSent(sent('wamid.c2', { tenant: 'tenant-a', to }));
      // A message stamped well before the launch is not the campaign's.
      expect(
        await add(b, status('wamid.old2', 'sent', { recipient: to, at: asked - CLOCK_SKEW_MS - 60_000 })),
      ).toBeUndefined();
      expect((await add(b, status('wamid.k2', 'sent', { recipient: to, at: asked + 50 })))?.campaign_id).toBe(
        'cmp-age',
      );
    });

    it('a saved campaign records nothing until it is launched, and is launched once', async () => {
      const { a, b } = await make();
      await a.saveCampaign(campaign('cmp-s', ['14155550301', '14155550302']));
      expect(await add(b, status('wamid.s0', 'sent', { recipient: '14155550301' }))).toBeUndefined();
      expect(await b.launchSavedCampaign('nope', Date.now(), new Date().toISOString())).toBeUndefined();
      // Launched later than the clock skew after the event held: the event is not its.
      const at = Date.now() + CLOCK_SKEW_MS + 1_000;
      expect(await b.launchSavedCampaign('cmp-s', at, new Date(at).toISOString())).toEqual(NONE);
      expect(await a.launchSavedCampaign('cmp-s', Date.now(), new Date().toISOString())).toBeUndefined();
      const r1 = await add(a, status('wamid.s1', 'sent', { recipient: '14155550301', at }));
      expect(r1).toMatchObject({ tenant: 'acme', campaign_id: 'cmp-s', kind: 'campaign' });
      expect(r1?.sent_at).toBe(new Date(at).toISOString());
      expect((await add(b, status('wamid.s2', 'sent', { recipient: '14155550302', at })))?.campaign_id).toBe(
        'cmp-s',
      );
    });
  });
}

describe('message stores: helpers', () => {
  it('rcsMobile: 10 digits, or a number of the country code with a 10-digit national number; nextStatus ranks', () => {
    expect(rcsMobile('+91 98765-43210', '91')).toBe('9876543210');
    expect(rcsMobile('9876543210', '91')).toBe('9876543210');
    expect(rcsMobile('12345', '91')).toBeUndefined();
    // Never the last 10 digits of another country's number.
    expect(rcsMobile('+49 151 23456789', '91')).toBeUndefined();
    expect(rcsMobile('+1 415 555 0123', '91')).toBeUndefined();
    expect(rcsMobile('+1 415 555 0123', '1')).toBe('4155550123');
    expect(nextStatus('delivered', status('x', 'sent'))).toBe('delivered');
    expect(nextStatus('read', status('x', 'failed'))).toBe('failed');
  });
});

// Two handles on one memory store: what one instance sees.
sharedCases('memory message store', async () => {
  const s = new MemoryMessageStore(48 * HOUR);
  return { a: s, b: s };
});

describe('memory message store: bounds', () => {
  it('keeps at most maxRecords records, oldest out', async () => {
    const s = new MemoryMessageStore(HOUR, { maxRecords: 3 });
    for (let i = 0; i < 5; i++) await s.recordSent(sent(`m-${i}`));
    expect(s.size).toBe(3);
    expect(await s.get('default', 'm-0')).toBeUndefined();
    expect(await s.get('default', 'm-1')).toBeUndefined();
    expect(await s.get('default', 'm-4')).toBeDefined();
  });

  it('forgets records and dedupe keys after the retention, pending sends after PENDING_TTL_MS', async () => {
    let now = 1_000_000;
    const s = new MemoryMessageStore(HOUR, { now: () => now });
    await s.recordSent(sent('m-r'));
    const ev = status('m-r', 'delivered', { at: now });
    expect((await addEvent(s, ev)).fresh).toBe(true);
    await s.recordPendingRcs(pending('9998887776', 'camp-r', { requested_at_ms: now }));
    now += PENDING_TTL_MS + 1;
    expect(
      await add(s, status('rcs-x', 'sent', { channel: 'rcs', recipient: '9998887776', at: now })),
    ).toBeUndefined();
    now = 1_000_000 + HOUR - 1;
    expect(await s.get('default', 'm-r')).toBeDefined();
    expect((await addEvent(s, ev)).fresh).toBe(false);
    now += 2;
    expect(await s.get('default', 'm-r')).toBeUndefined();
    expect((await addEvent(s, ev)).fresh).toBe(true);
    expect(s.size).toBe(0);
  });

  it("makes room for campaign sends by dropping campaigns' sends, never a call's", async () => {
    const s = new MemoryMessageStore(HOUR, { maxPending: 3 });
    expect(s.maxCampaignRecipients).toBe(10_000);
    await s.recordPendingRcs(pending('9876543290', 'camp-call'));
    await s.recordCampaign(
      campaign('cmp-over', ['9876543291', '9876543292', '9876543293'], { channel: 'rcs' }),
    );
    // The call's send still holds its number, and takes its message.
    expect(await s.reserveRcs('9876543290')).toBeUndefined();
    expect(
      await add(s, status('rcs-call', 'sent', { channel: 'rcs', recipient: '9876543290' })),
    ).toMatchObject({
      session_id: 'call-1',
      campaign_id: 'camp-call',
    });
    // The campaign's oldest send made room.
    expect(
      await add(s, status('rcs-91', 'sent', { channel: 'rcs', recipient: '9876543291' })),
    ).toBeUndefined();
    expect(
      (await add(s, status('rcs-93', 'sent', { channel: 'rcs', recipient: '9876543293' })))?.campaign_id,
    ).toBe('cmp-over');
  });

  it('keeps at most maxPending pending sends and saved recipients, oldest out', async () => {
    const s = new MemoryMessageStore(HOUR, { maxPending: 3 });
    await s.recordCampaign(campaign('cmp-big', ['14155550401', '14155550402', '14155550403', '14155550404']));
    expect(await add(s, status('w-1', 'sent', { recipient: '14155550401' }))).toBeUndefined();
    expect((await add(s, status('w-4', 'sent', { recipient: '14155550404' })))?.campaign_id).toBe('cmp-big');
    await s.saveCampaign(campaign('cmp-s1', ['14155550501', '14155550502']));
    await s.saveCampaign(campaign('cmp-s2', ['14155550503', '14155550504']));
    expect(await s.launchSavedCampaign('cmp-s1', Date.now(), new Date().toISOString())).toBeUndefined();
    expect(await s.launchSavedCampaign('cmp-s2', Date.now(), new Date().toISOString())).toEqual(NONE);
  });

  it('forgets saved campaigns after the retention; campaign sends wait PENDING_TTL_MS after the campaign is sent', async () => {
    let now = 1_000_000;
    const s = new MemoryMessageStore(HOUR, { now: () => now });
    await s.saveCampaign(campaign('cmp-x', ['14155550601']));
    // 800 recipients at 80 a second: the last is sent 10 s after the first.
    const many = Array.from({ length: 800 }, (_, i) => `1415556${String(i).padStart(4, '0')}`);
    await s.recordCampaign(campaign('cmp-y', many, { requested_at_ms: now }));
    now += PENDING_TTL_MS + 9_000;
    expect((await add(s, status('w-y1', 'sent', { recipient: many[0]!, at: now })))?.campaign_id).toBe(
      'cmp-y',
    );
    now += 2_000;
    expect(await add(s, status('w-y2', 'sent', { recipient: many[1]!, at: now }))).toBeUndefined();
    now = 1_000_000 + HOUR + 1;
    expect(await s.launchSavedCampaign('cmp-x', now, new Date(now).toISOString())).toBeUndefined();
  });

  it('keeps at most maxSeenKeys dedupe keys, oldest out', async () => {
    const s = new MemoryMessageStore(HOUR, { maxSeenKeys: 2 });
    const [a, b, c] = ['a', 'b', 'c'].map((id) => status(id, 'read'));
    for (const ev of [a!, b!, c!]) expect((await addEvent(s, ev)).fresh).toBe(true);
    expect((await addEvent(s, c!)).fresh).toBe(false);
    expect((await addEvent(s, a!)).fresh).toBe(true);
  });
});

describe.skipIf(skip !== undefined)('Redis message store', () => {
  let redis: TestRedis;
  const links: RedisLink[] = [];
  let n = 0;
  beforeAll(async () => {
    redis = await useRedis();
  });
  afterEach(async () => {
    for (const l of links.splice(0)) await l.close();
  });
  afterAll(async () => {
    await redis.stop();
  });

  async function link(prefix: string): Promise<RedisLink> {
    const l = new RedisLink(redis.url, prefix, createLogger('silent'), createStoreMetrics(new Registry()));
    expect(await l.waitReady(5_000)).toBe(true);
    links.push(l);
    return l;
  }

  // Two instances, each with its own connection, sharing one prefix.
  sharedCases('two instances', async () => {
    const prefix = `messages-test-${process.pid}-${++n}:`;
    return {
      a: new RedisMessageStore(await link(prefix), 48 * HOUR),
      b: new RedisMessageStore(await link(prefix), 48 * HOUR),
    };
  });

  it('an event whose script fails partway is not marked seen: the retry is recorded', async () => {
    const prefix = `messages-partial-${process.pid}:`;
    const store = new RedisMessageStore(await link(prefix), HOUR);
    const client = new Redis(redis.url);
    try {
      // A pending list of the wrong type makes the script fail after it has begun.
      await client.set(`${prefix}mp:rcs:9876543250`, 'x');
      const ev = status('rcs-partial', 'sent', { channel: 'rcs', recipient: '9876543250' });
      await expect(addEvent(store, ev)).rejects.toThrow();
      await client.del(`${prefix}mp:rcs:9876543250`);
      expect((await addEvent(store, ev)).fresh).toBe(true);
      expect((await addEvent(store, ev)).fresh).toBe(false);
    } finally {
      client.disconnect();
    }
  });

  it('holds campaigns of as many recipients as the memory store', async () => {
    const store = new RedisMessageStore(await link(`messages-max-${process.pid}:`), HOUR);
    expect(store.maxCampaignRecipients).toBe(new MemoryMessageStore(HOUR).maxCampaignRecipients);
  });

  it('every key expires: records and dedupe keys after the retention, pending sends after PENDING_TTL_MS', async () => {
    const prefix = `messages-ttl-${process.pid}:`;
    const store = new RedisMessageStore(await link(prefix), HOUR);
    await store.recordSent(sent('m-ttl'));
    await add(store, status('m-ttl', 'delivered'));
    await add(store, status('m-orphan', 'sent'));
    await store.reserveRcs('4445556668');
    await store.recordPendingRcs(pending('4445556667', 'camp-ttl'));
    await store.recordCampaign(campaign('cmp-ttl', ['14155550701', '14155550702']));
    await store.saveCampaign(campaign('cmp-saved', ['14155550703']));
    const client = new Redis(redis.url);
    try {
      const keys = await client.keys(`${prefix}*`);
      // m, me, 2 seen, mo and mom of the orphan, a reservation, 3 pending lists, the saved campaign.
      expect(keys.length).toBe(11);
      for (const k of keys) {
        const ttl = await client.pttl(k);
        expect(ttl, k).toBeGreaterThan(0);
        expect(ttl, k).toBeLessThanOrEqual(HOUR);
        if (/:(mp|mr):/.test(k)) expect(ttl, k).toBeLessThanOrEqual(PENDING_TTL_MS + 1_000);
      }
      expect(await client.pttl(`${prefix}mo:m-orphan`)).toBeLessThanOrEqual(60_000);
    } finally {
      client.disconnect();
    }
  });
});
