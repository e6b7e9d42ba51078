/**
 * The message stores, in memory and on a real Redis: dedupe keys, status by rank, events that outrun
 * the send's answer, RCS sends and campaign recipients adopting their message id, saved campaigns,
 * retention and the memory caps.
 */
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import type { MessagingEvent } from '../../src/provider/messaging/types.js';
import { MemoryMessageStore, nextStatus, rcsMobile } from '../../src/state/messages.js';
import { RedisLink } from '../../src/state/redis-link.js';
import { RedisMessageStore } from '../../src/state/redis-messages.js';
import { createStoreMetrics } from '../../src/state/store-metrics.js';
import type { CampaignSends, MessageStore, PendingRcsSend, SentMessage } from '../../src/state/types.js';
import { redisSkipReason, type TestRedis, useRedis } from '../helpers/redis.js';

const skip = redisSkipReason();
if (skip !== undefined) console.warn(`state/messages.test.ts: ${skip}`);

const HOUR = 3_600_000;

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
  o: { channel?: 'chat' | 'rcs'; recipient?: string } = {},
): MessagingEvent => ({
  kind: 'status',
  channel: o.channel ?? 'chat',
  message_id: id,
  status: s,
  recipient: o.recipient ?? '15550100',
  timestamp: new Date().toISOString(),
});

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

/** The behaviour both stores share. */
function sharedCases(name: string, make: () => Promise<{ a: MessageStore; b: MessageStore }>): void {
  describe(name, () => {
    it('markSeen is true once per key, also across two stores sharing the state', async () => {
      const { a, b } = await make();
      const results = await Promise.all([a.markSeen('k1'), b.markSeen('k1'), a.markSeen('k1')]);
      expect(results.filter((r) => r)).toHaveLength(1);
      expect(await b.markSeen('k2')).toBe(true);
    });

    it('status by rank: sent < delivered < read, failed wins; events kept in order', async () => {
      const { a, b } = await make();
      await a.recordSent(sent('m-1'));
      await b.addEvent(status('m-1', 'read'));
      const r = await a.addEvent(status('m-1', 'delivered'));
      expect(r?.status).toBe('read');
      expect(r?.events.map((e) => (e.kind === 'status' ? e.status : ''))).toEqual(['read', 'delivered']);
      const f = await b.addEvent(status('m-1', 'failed'));
      expect(f?.status).toBe('failed');
      expect((await a.addEvent(status('m-1', 'read')))?.status).toBe('failed');
      expect((await b.get('default', 'm-1'))?.events).toHaveLength(4);
    });

    it('events that arrive before the send is recorded are adopted by it', async () => {
      const { a, b } = await make();
      expect(await a.addEvent(status('m-early', 'sent'))).toBeUndefined();
      expect(await a.addEvent(status('m-early', 'delivered'))).toBeUndefined();
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
      const first = await b.addEvent(status('rcs-a', 'sent', { channel: 'rcs', recipient: '+919876543210' }));
      expect(first).toMatchObject({
        message_id: 'rcs-a',
        channel: 'rcs',
        campaign_id: 'camp-1',
        session_id: 'call-1',
        to: '9876543210',
        status: 'sent',
      });
      // The same message again: its record, not the next send.
      expect((await a.addEvent(status('rcs-a', 'delivered', { channel: 'rcs' })))?.campaign_id).toBe(
        'camp-1',
      );
      const second = await a.addEvent(status('rcs-b', 'sent', { channel: 'rcs', recipient: '9876543210' }));
      expect(second).toMatchObject({ message_id: 'rcs-b', campaign_id: 'camp-2', session_id: 'call-2' });
      // No send left for that number: held as an orphan.
      expect(
        await a.addEvent(status('rcs-c', 'sent', { channel: 'rcs', recipient: '9876543210' })),
      ).toBeUndefined();
      expect((await a.get('default', 'rcs-a'))?.status).toBe('delivered');
    });

    it('an RCS event that outruns the launcher answer is adopted, one from before the launch is not', async () => {
      const { a, b } = await make();
      const before = Date.now() - 5_000;
      await a.addEvent(status('rcs-late', 'delivered', { channel: 'rcs', recipient: '1112223334' }));
      const rec = await b.recordPendingRcs(pending('1112223334', 'camp-3', { requested_at_ms: before }));
      expect(rec).toMatchObject({ message_id: 'rcs-late', campaign_id: 'camp-3', status: 'delivered' });
      await a.addEvent(status('rcs-old', 'sent', { channel: 'rcs', recipient: '5556667778' }));
      const later = await b.recordPendingRcs(
        pending('5556667778', 'camp-4', { requested_at_ms: Date.now() + 1_000 }),
      );
      expect(later).toBeUndefined();
    });

    it('a campaign records a send per recipient: events adopt them by channel and recipient, oldest first', async () => {
      const { a, b } = await make();
      expect(await a.recordCampaign(campaign('cmp-1', ['14155550101', '14155550102']))).toEqual([]);
      expect(await b.recordCampaign(campaign('cmp-2', ['14155550101']))).toEqual([]);
      // The same digits on RCS are another recipient.
      expect(
        await b.addEvent(status('rcs-z', 'sent', { channel: 'rcs', recipient: '14155550101' })),
      ).toBeUndefined();
      const first = await b.addEvent(status('wamid.1', 'sent', { recipient: '14155550101' }));
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
      expect((await a.addEvent(status('wamid.1', 'delivered', { recipient: '14155550101' })))?.status).toBe(
        'delivered',
      );
      expect((await a.addEvent(status('wamid.2', 'sent', { recipient: '14155550101' })))?.campaign_id).toBe(
        'cmp-2',
      );
      expect(
        (await b.addEvent(status('wamid.3', 'delivered', { recipient: '14155550102' })))?.campaign_id,
      ).toBe('cmp-1');
      // Every recipient's send has its message: a further one is held as an orphan.
      expect(await a.addEvent(status('wamid.4', 'sent', { recipient: '14155550101' }))).toBeUndefined();
      expect(await a.get('acme', 'wamid.1')).toMatchObject({ status: 'delivered', kind: 'campaign' });
      expect(await a.get('default', 'wamid.1')).toBeUndefined();
      // RCS campaigns match the 10 digits, whatever the webhook adds before them.
      await a.recordCampaign(campaign('cmp-r', ['9876500001'], { channel: 'rcs' }));
      expect(
        await b.addEvent(status('rcs-1', 'delivered', { channel: 'rcs', recipient: '+919876500001' })),
      ).toMatchObject({ channel: 'rcs', campaign_id: 'cmp-r', to: '9876500001', status: 'delivered' });
    });

    it('an event that outruns the launch answer is adopted by the campaign, one from before the launch is not', async () => {
      const { a, b } = await make();
      const before = Date.now() - 5_000;
      await a.addEvent(status('wamid.early', 'sent', { recipient: '14155550201' }));
      await a.addEvent(status('wamid.early', 'delivered', { recipient: '14155550201' }));
      const adopted = await b.recordCampaign(
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
      await a.addEvent(status('wamid.old', 'sent', { recipient: '14155550203' }));
      expect(
        await b.recordCampaign(campaign('cmp-l', ['14155550203'], { requested_at_ms: Date.now() + 1_000 })),
      ).toEqual([]);
      // The other recipient's send still waits for its event.
      expect(
        (await a.addEvent(status('wamid.next', 'sent', { recipient: '14155550202' })))?.campaign_id,
      ).toBe('cmp-e');
    });

    it("a call's chat message whose first event a campaign send took is the call's once its answer names it", async () => {
      const { a, b } = await make();
      await a.recordCampaign(campaign('cmp-race', ['14155550801'], { tenant: 'default' }));
      // The call's message's event outruns the sender's answer and is taken for the campaign's.
      expect(
        (await b.addEvent(status('wamid.call', 'sent', { recipient: '14155550801' })))?.campaign_id,
      ).toBe('cmp-race');
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
      expect(await b.addEvent(status('wamid.camp', 'delivered', { recipient: '14155550801' }))).toMatchObject(
        { campaign_id: 'cmp-race', kind: 'campaign', status: 'delivered' },
      );
      expect((await b.get('default', 'wamid.call'))?.session_id).toBe('call-7');
    });

    it('a saved campaign records nothing until it is launched, and is launched once', async () => {
      const { a, b } = await make();
      await a.saveCampaign(campaign('cmp-s', ['14155550301', '14155550302']));
      expect(await b.addEvent(status('wamid.s0', 'sent', { recipient: '14155550301' }))).toBeUndefined();
      expect(await b.launchSavedCampaign('nope', Date.now(), new Date().toISOString())).toBeUndefined();
      const at = Date.now() + 5;
      expect(await b.launchSavedCampaign('cmp-s', at, new Date(at).toISOString())).toEqual([]);
      expect(await a.launchSavedCampaign('cmp-s', Date.now(), new Date().toISOString())).toBeUndefined();
      const r1 = await a.addEvent(status('wamid.s1', 'sent', { recipient: '14155550301' }));
      expect(r1).toMatchObject({ tenant: 'acme', campaign_id: 'cmp-s', kind: 'campaign' });
      expect(r1?.sent_at).toBe(new Date(at).toISOString());
      expect((await b.addEvent(status('wamid.s2', 'sent', { recipient: '14155550302' })))?.campaign_id).toBe(
        'cmp-s',
      );
    });
  });
}

describe('message stores: helpers', () => {
  it('rcsMobile keeps the last 10 digits; nextStatus ranks', () => {
    expect(rcsMobile('+91 98765-43210')).toBe('9876543210');
    expect(rcsMobile('12345')).toBeUndefined();
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

  it('forgets records, dedupe keys and pending sends after the retention', async () => {
    let now = 1_000_000;
    const s = new MemoryMessageStore(HOUR, { now: () => now });
    await s.recordSent(sent('m-r'));
    expect(await s.markSeen('k')).toBe(true);
    await s.recordPendingRcs(pending('9998887776', 'camp-r'));
    now += HOUR - 1;
    expect(await s.get('default', 'm-r')).toBeDefined();
    expect(await s.markSeen('k')).toBe(false);
    now += 2;
    expect(await s.get('default', 'm-r')).toBeUndefined();
    expect(await s.markSeen('k')).toBe(true);
    expect(
      await s.addEvent(status('rcs-x', 'sent', { channel: 'rcs', recipient: '9998887776' })),
    ).toBeUndefined();
    expect(s.size).toBe(0);
  });

  it('keeps at most maxPending pending sends and saved recipients, oldest out', async () => {
    const s = new MemoryMessageStore(HOUR, { maxPending: 3 });
    await s.recordCampaign(campaign('cmp-big', ['14155550401', '14155550402', '14155550403', '14155550404']));
    expect(await s.addEvent(status('w-1', 'sent', { recipient: '14155550401' }))).toBeUndefined();
    expect((await s.addEvent(status('w-4', 'sent', { recipient: '14155550404' })))?.campaign_id).toBe(
      'cmp-big',
    );
    await s.saveCampaign(campaign('cmp-s1', ['14155550501', '14155550502']));
    await s.saveCampaign(campaign('cmp-s2', ['14155550503', '14155550504']));
    expect(await s.launchSavedCampaign('cmp-s1', Date.now(), new Date().toISOString())).toBeUndefined();
    expect(await s.launchSavedCampaign('cmp-s2', Date.now(), new Date().toISOString())).toEqual([]);
  });

  it('forgets saved campaigns and campaign sends after the retention', async () => {
    let now = 1_000_000;
    const s = new MemoryMessageStore(HOUR, { now: () => now });
    await s.saveCampaign(campaign('cmp-x', ['14155550601']));
    await s.recordCampaign(campaign('cmp-y', ['14155550602'], { requested_at_ms: now }));
    now += HOUR + 1;
    expect(await s.launchSavedCampaign('cmp-x', now, new Date(now).toISOString())).toBeUndefined();
    expect(await s.addEvent(status('w-y', 'sent', { recipient: '14155550602' }))).toBeUndefined();
  });

  it('keeps at most maxSeenKeys dedupe keys, oldest out', async () => {
    const s = new MemoryMessageStore(HOUR, { maxSeenKeys: 2 });
    for (const k of ['a', 'b', 'c']) expect(await s.markSeen(k)).toBe(true);
    expect(await s.markSeen('c')).toBe(false);
    expect(await s.markSeen('a')).toBe(true);
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

  it('every key expires: records and dedupe keys after the retention', async () => {
    const prefix = `messages-ttl-${process.pid}:`;
    const store = new RedisMessageStore(await link(prefix), HOUR);
    await store.recordSent(sent('m-ttl'));
    await store.addEvent(status('m-ttl', 'delivered'));
    await store.markSeen('st:chat:m-ttl:delivered');
    await store.addEvent(status('m-orphan', 'sent'));
    await store.recordPendingRcs(pending('4445556667', 'camp-ttl'));
    await store.recordCampaign(campaign('cmp-ttl', ['14155550701', '14155550702']));
    await store.saveCampaign(campaign('cmp-saved', ['14155550703']));
    const client = new Redis(redis.url);
    try {
      const keys = await client.keys(`${prefix}*`);
      // m, me, seen, mo and mom of the orphan, 3 pending lists, the saved campaign.
      expect(keys.length).toBe(9);
      for (const k of keys) {
        const ttl = await client.pttl(k);
        expect(ttl, k).toBeGreaterThan(0);
        expect(ttl, k).toBeLessThanOrEqual(HOUR);
      }
      expect(await client.pttl(`${prefix}mo:m-orphan`)).toBeLessThanOrEqual(60_000);
    } finally {
      client.disconnect();
    }
  });
});
