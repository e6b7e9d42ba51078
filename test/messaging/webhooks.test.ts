/**
 * `POST /v1/webhooks/messaging` on a real bridge over loopback: the webhook secret, chat and RCS
 * payloads that cannot be read (400) and bad events in readable ones (skipped and reported), inbound
 * messages that are not events, duplicates counted once, and a store that fails answered 503 with its
 * retry recorded. The messaging provider here is a stand-in client answering with fixed ids: these
 * tests post the provider's webhooks themselves. (Events reaching the call's bot, and Redis, down or
 * shared by two instances: webhook-delivery.test.ts; random posts:
 * webhook-fuzz.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { call } from '../control/harness.js';
import {
  chatStatuses,
  notices,
  postWebhook,
  rcsStatus,
  startWebhookBridge,
  useWebhookRigs,
  WEBHOOK_SECRET,
} from '../helpers/messaging.js';
import { quietFor } from '../helpers/wait.js';

describe('messaging webhooks', () => {
  const { open, rigWithCall } = useWebhookRigs();

  it('401 without the webhook secret, or with a wrong one; header or ?token= accepted', async () => {
    const rig = await startWebhookBridge();
    open.push(rig);
    const body = rcsStatus('m-auth', 'sent');
    for (const token of [null, 'wrong-secret', `${WEBHOOK_SECRET}x`]) {
      const r = await postWebhook(rig.http, body, { token });
      expect(r.status, String(token)).toBe(401);
      expect(r.body.error).toBe('unauthorized');
      expect(JSON.stringify(r.body)).not.toContain(WEBHOOK_SECRET);
    }
    expect((await postWebhook(rig.http, body, { token: 'wrong', query: true })).status).toBe(401);
    expect((await postWebhook(rig.http, body, { query: true })).body).toEqual({ received: 1, duplicates: 0 });
    expect((await postWebhook(rig.http, body)).body).toEqual({ received: 1, duplicates: 1 });
    // A header that is not a bearer token leaves the query's token to decide.
    const basic = await fetch(`${rig.http}/v1/webhooks/messaging?token=${WEBHOOK_SECRET}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Basic dXNlcjpwYXNz' },
      body: JSON.stringify(body),
    });
    expect(basic.status).toBe(200);
  });

  it('without MESSAGING_WEBHOOK_SECRET posts need no token, and start-up says so', async () => {
    const rig = await startWebhookBridge({ MESSAGING_WEBHOOK_SECRET: '' });
    open.push(rig);
    expect((await postWebhook(rig.http, rcsStatus('m-open', 'sent'), { token: null })).status).toBe(200);
    expect(rig.logs.join('\n')).toMatch(/MESSAGING_WEBHOOK_SECRET is not set/);
  });

  it('in production without a webhook secret (messaging off) every post is refused', async () => {
    const rig = await startWebhookBridge({
      NODE_ENV: 'production',
      PROVIDER_BASE_URL: 'http://127.0.0.1:9/v1',
      MESSAGING_WEBHOOK_SECRET: '',
    });
    open.push(rig);
    const r = await postWebhook(rig.http, rcsStatus('m-prod', 'sent'), { token: null });
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(/MESSAGING_WEBHOOK_SECRET is not set/);
    expect(rig.logs.join('\n')).not.toMatch(/accepts posts without a token/);
  });

  it('400 naming what is wrong when the post cannot be read at all; nothing from it is counted', async () => {
    const rig = await startWebhookBridge();
    open.push(rig);
    const cases: [unknown, RegExp][] = [
      [{ hello: 'world' }, /must be a chat payload .* an RCS event .* or an array of RCS events/],
      [[], /empty array/],
      [{ object: 'chat', entry: {} }, /^entry must be an array, got a object$/],
      [{ object: 'email', entry: [] }, /^object must be "chat" \(a chat webhook payload\), got "email"$/],
      ['"just text"', /must be a chat payload .*got "just text"$/],
    ];
    for (const [body, message] of cases) {
      const r = await postWebhook(rig.http, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.message).toMatch(message);
    }
    // Not JSON at all.
    expect((await postWebhook(rig.http, '{"object": "chat", ')).status).toBe(400);
    // Over the bound of a post: refused whole, its events not counted.
    const tooMany = Array.from({ length: 1_001 }, (_, i) => rcsStatus(`m-many-${i}`, 'read'));
    const r = await postWebhook(rig.http, tooMany);
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/at most 1000 events/);
    expect((await postWebhook(rig.http, rcsStatus('m-many-0', 'read'))).body).toEqual({
      received: 1,
      duplicates: 0,
    });
  });

  it('a bad event in a readable post is skipped and reported; the others are taken', async () => {
    const rig = await startWebhookBridge();
    open.push(rig);
    const now = new Date().toISOString();
    // [post, first rejection, events taken, events skipped]
    const cases: [unknown, string, number, number][] = [
      [
        { ...rcsStatus('m-bad-1', 'sent'), status: 'bounced' },
        'status must be sent, delivered, read, failed, got "bounced"',
        0,
        1,
      ],
      [
        { ...rcsStatus('m-bad-2', 'sent'), event_type: 'opened' },
        'event_type must be delivery_status or button_click, got "opened"',
        0,
        1,
      ],
      [
        [rcsStatus('m-ok-3', 'sent'), { ...rcsStatus('m-bad-3', 'read'), timestamp: 'yesterday' }],
        '[1].timestamp must be an ISO 8601 timestamp, got "yesterday"',
        1,
        1,
      ],
      [[rcsStatus('m-ok-4', 'sent'), 'not an event'], '[1] must be an object, got "not an event"', 1, 1],
      [
        {
          object: 'chat',
          entry: [
            {
              changes: [
                {
                  field: 'messages',
                  value: {
                    statuses: [
                      { id: 'm-bad-5', status: 'sent' },
                      { id: 'm-ok-5', status: 'sent', timestamp: now, recipient_id: '14155550100' },
                    ],
                  },
                },
              ],
            },
          ],
        },
        'entry[0].changes[0].value.statuses[0].timestamp must be an ISO 8601 timestamp, got nothing',
        1,
        1,
      ],
      [
        {
          object: 'chat',
          entry: [
            'not an entry',
            {
              changes: [
                {
                  field: 'messages',
                  value: {
                    messages: [
                      {
                        id: 'x',
                        from: '1',
                        timestamp: now,
                        type: 'button',
                        button: { payload: 'p', text: 't' },
                      },
                    ],
                    statuses: [{ id: 'm-ok-6', status: 'read', timestamp: now, recipient_id: '1415555' }],
                  },
                },
              ],
            },
          ],
        },
        // The entry, and the tapped button without its context.
        'entry[0] must be an object, got "not an entry"',
        1,
        2,
      ],
    ];
    for (const [body, first, received, rejected] of cases) {
      const r = await postWebhook(rig.http, body);
      expect(r, JSON.stringify(body)).toEqual({
        status: 200,
        body: { received, duplicates: 0, rejected, first_rejection: first },
      });
    }
    // What was taken is recorded: posted again, a duplicate.
    expect((await postWebhook(rig.http, rcsStatus('m-ok-3', 'sent'))).body).toEqual({
      received: 1,
      duplicates: 1,
    });
    // One unknown status in a batch of 1,000 costs that event only.
    const batch = Array.from({ length: 1_000 }, (_, i) => rcsStatus(`m-batch-k-${i}`, 'delivered'));
    batch[500] = { ...batch[500]!, status: 'opened' };
    const big = await postWebhook(rig.http, batch);
    expect(big).toEqual({
      status: 200,
      body: {
        received: 999,
        duplicates: 0,
        rejected: 1,
        first_rejection: '[500].status must be sent, delivered, read, failed, got "opened"',
      },
    });
    // Counted by outcome, the field only in the log.
    const metrics = await (await fetch(`${rig.http}/metrics`)).text();
    expect(metrics).toMatch(
      /voicebridge_messaging_webhook_events_total\{channel="rcs",outcome="rejected"\} 5/,
    );
    expect(rig.logs.join('\n')).toContain('"field":"[500].status"');
    expect(rig.logs.join('\n')).not.toContain('opened');
  });

  it('inbound texts and other replies are not events; a batch larger than a REST body is taken whole', async () => {
    const rig = await startWebhookBridge();
    open.push(rig);
    const now = new Date().toISOString();
    const inbound = {
      object: 'chat',
      entry: [
        {
          changes: [
            { field: 'message_template_status_update', value: {} },
            {
              field: 'messages',
              value: {
                messages: [
                  {
                    id: 'in-1',
                    from: '14155550100',
                    timestamp: now,
                    type: 'text',
                    text: { body: 'hello there' },
                  },
                  {
                    id: 'in-2',
                    from: '14155550100',
                    timestamp: now,
                    type: 'interactive',
                    interactive: { type: 'list_reply', list_reply: { id: 'r1', title: 'One' } },
                  },
                ],
                statuses: [{ id: 'm-in', status: 'sent', timestamp: now, recipient_id: '14155550100' }],
              },
            },
          ],
        },
      ],
    };
    expect((await postWebhook(rig.http, inbound)).body).toEqual({ received: 1, duplicates: 0 });
    expect(rig.logs.join('\n')).not.toContain('hello there');
    // 600 events, ~110 KB: over BODY_LIMIT_BYTES (64 KB), under the webhook's own bound.
    const batch = Array.from({ length: 600 }, (_, i) => rcsStatus(`m-batch-${i}`, 'delivered'));
    expect(JSON.stringify(batch).length).toBeGreaterThan(65_536);
    expect((await postWebhook(rig.http, batch)).body).toEqual({ received: 600, duplicates: 0 });
  });

  it('a store that fails answers 503 and marks nothing seen that it did not store: the retry is recorded', async () => {
    const { rig, conn, token } = await rigWithCall();
    const sent = await call(rig.http, 'POST', '/v1/sessions/call-1/message', {
      token,
      body: { channel: 'chat', message: { type: 'text', text: { body: 'hi' } } },
    });
    const id = sent.body.message_id as string;
    // The store fails once, on the post's second event.
    const store = rig.bridge.ctx.messages;
    const addEvent = store.addEvent.bind(store);
    let calls = 0;
    store.addEvent = async (ev, recipient) => {
      if (++calls === 2) throw new Error('disk full');
      return addEvent(ev, recipient);
    };
    const first = await postWebhook(rig.http, chatStatuses(id, 'sent', 'delivered'));
    expect(first.status).toBe(503);
    expect(first.body).toEqual({
      error: 'store_unavailable',
      message:
        "the message store could not record 1 of the post's 2 events; post it again (the events recorded count as duplicates)",
    });
    // The event stored was forwarded; the other was not, and is not counted seen.
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'sent');
    const retry = await postWebhook(rig.http, chatStatuses(id, 'sent', 'delivered'));
    expect(retry).toEqual({ status: 200, body: { received: 2, duplicates: 1 } });
    await conn.waitEvent('message_status', 5_000, (e) => e.status === 'delivered');
    await quietFor(100, 'a second copy of a status');
    expect(notices(conn, 'message_status').map((e) => e.status)).toEqual(['sent', 'delivered']);
    const rec = await call(rig.http, 'GET', `/v1/messages/${encodeURIComponent(id)}`, { token });
    expect(rec.body).toMatchObject({ status: 'delivered' });
    expect((rec.body.events as unknown[]).length).toBe(2);
  });
});
