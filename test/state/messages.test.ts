/**
 * The message stores, in memory and on a real Redis: dedupe keys, status by rank, events that outrun
 * the send's answer, RCS sends adopting their message id, retention and the memory caps.
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
import type { MessageStore, PendingRcsSend, SentMessage } from '../../src/state/types.js';
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
    const client = new Redis(redis.url);
    try {
      const keys = await client.keys(`${prefix}*`);
      expect(keys.length).toBe(5);
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
