import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { BridgeError } from '../../src/errors.js';
import {
  createMessagingClient,
  type MessagingClientOptions,
  MIN_ATTEMPT_MS,
  retryAfterMs,
} from '../../src/messaging/client.js';
import type { ChatSendRequest, MessagingClient } from '../../src/messaging/types.js';
import { createMetrics } from '../../src/metrics.js';
import { closedPort } from '../control/harness.js';
import { failure } from '../helpers/errors.js';
import { captureLog } from '../helpers/log-capture.js';
import { quietFor, reach, waitFor } from '../helpers/wait.js';
import { maxInWindow } from '../helpers/window.js';

/** What every line of the bridge's logger carries, whatever was logged. */
const BASE_LOG_KEYS = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'name', 'service']);

const TOKEN = 'tok-5f1e2d';
const TEXT: ChatSendRequest = { to: '14155550100', message: { type: 'text', text: { body: 'hello' } } };
const SENT = {
  success: true,
  data: { message_id: 'm1', wa_id: '14155550100', status: 'sent' },
  performance: { total_time_ms: 12 },
};
const CAMPAIGN = {
  id: '6b0c8a4e-1f7d-4a51-9a43-0b7e3d5c2f10',
  campaign_name: 'spring_sale',
  template_name: 'order_update',
  status: 'launched',
  total_recipients: 1,
  queued_at: '2026-11-22T07:00:00Z',
};
const CAMPAIGN_REQUEST = {
  campaign_name: 'spring_sale',
  template_name: 'order_update',
  audience_rows: [{ phone: '14155550100', BODY_1: 'Ada' }],
};
const TEMPLATE_INPUT = {
  name: 'order_update',
  category: 'UTILITY',
  language: 'en_US',
  components: [{ type: 'BODY', text: 'Hi {{1}}' }],
  sample_values: { '1': 'Ada' },
} as const;

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly auth: string | undefined;
  readonly body: unknown;
  /** performance.now() at arrival. */
  readonly at: number;
}

type Handler = (req: FastifyRequest, reply: FastifyReply, n: number) => unknown;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A scripted provider on 127.0.0.1: `handler` answers the n-th request (0-based). */
async function provider(handler: Handler): Promise<{ url: string; seen: Seen[] }> {
  const app = Fastify();
  const seen: Seen[] = [];
  app.all('/*', async (req, reply) => {
    seen.push({
      method: req.method,
      url: req.url,
      auth: req.headers.authorization,
      body: req.body,
      at: performance.now(),
    });
    return handler(req, reply, seen.length - 1);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  cleanups.push(() => app.close());
  const { port } = app.server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/v1`, seen };
}

function client(baseUrl: string, extra: Partial<MessagingClientOptions> = {}): MessagingClient {
  const c = createMessagingClient({
    baseUrl,
    token: TOKEN,
    connectTimeoutMs: 1_000,
    readTimeoutMs: 3_000,
    maxRateRetries: 3,
    retryBaseMs: 20,
    random: () => 0.5,
    ...extra,
  });
  cleanups.push(() => c.close());
  return c;
}

const answer = (status: number, body: unknown) => (_req: FastifyRequest, reply: FastifyReply) =>
  reply
    .code(status)
    .type('application/json')
    .send(typeof body === 'string' ? body : JSON.stringify(body));

const networkError = (status: number, code: number) =>
  answer(status, { success: false, error: `network error ${code}`, error_data: { code } });

describe('messaging client: requests', () => {
  it('refuses a bad request locally: nothing reaches the provider', async () => {
    const p = await provider(answer(200, SENT));
    const c = client(p.url);
    expect((await failure(c.sendChatMessage({ ...TEXT, to: '+14155550100' }))).field).toBe('to');
    expect((await failure(c.createChatTemplate({ ...TEMPLATE_INPUT, name: 'Order' }))).message).toBe(
      'Template name invalid',
    );
    expect((await failure(c.createChatCampaign({ ...CAMPAIGN_REQUEST, audience_rows: [] }))).code).toBe(
      'bad_request',
    );
    expect((await failure(c.getChatTemplateStatus(''))).field).toBe('templateName');
    expect((await failure(c.launchChatCampaign(''))).field).toBe('campaign_id');
    const rcs = {
      action: 'create_template',
      template_name: 'x',
      template_type: 'text',
      bot_name: 'b',
    } as const;
    expect((await failure(c.createRcsTemplate(rcs as never))).message).toBe('text is required');
    const bad = { template_name: 't', campaign_name: 'c', contacts: [{ mobile: '123' }] };
    expect((await failure(c.launchRcsCampaign(bad))).field).toBe('contacts[0].mobile');
    expect((await failure(c.listChatTemplates({ status: 'LIVE' as never }))).field).toBe('status');
    expect(p.seen).toHaveLength(0);
  });

  it('sends each call to its endpoint with the bearer token, and returns the checked answer', async () => {
    const template = {
      id: 't1',
      template_name: 'order_update',
      status: 'PENDING',
      category: 'UTILITY',
      language: 'en_US',
      created_at: '2026-11-22T07:00:00Z',
    };
    const status = {
      id: 't1',
      template_name: 'order_update',
      status: 'APPROVED',
      rejection_reason: null,
      quality_score: 'GREEN',
    };
    const rcsCreated = { message: 'created' };
    const p = await provider((req, reply) => {
      const b = req.body as { action?: string } | undefined;
      switch (req.url.replace(/\?.*/, '')) {
        case '/v1/chat_templates':
          return answer(200, {
            success: true,
            data: { templates: [{ ...template, components: [] }] },
            count: 1,
          })(req, reply);
        case '/v1/chat_template_manager':
          if (b?.action === 'create')
            return answer(200, { success: true, template, message: 'submitted' })(req, reply);
          if (b?.action === 'get_status') return answer(200, { success: true, template: status })(req, reply);
          return answer(200, { success: true })(req, reply);
        case '/v1/chat_message_sender':
          return answer(200, SENT)(req, reply);
        case '/v1/chat_campaign_creator':
          return answer(200, { success: true, campaign: CAMPAIGN })(req, reply);
        case '/v1/rcs_template_manager':
          return answer(200, rcsCreated)(req, reply);
        case '/v1/rcs_campaign_launcher':
          return answer(200, { status: 'queued', campaign_id: 'r1', messages_queued: 1 })(req, reply);
      }
      return answer(404, { error: 'no route' })(req, reply);
    });
    const c = client(p.url, { accountId: 'acc-1' });
    const list = await c.listChatTemplates({ status: 'APPROVED', category: 'UTILITY' });
    expect(list.count).toBe(1);
    expect((list.templates[0] as { template_name?: string } | undefined)?.template_name).toBe('order_update');
    expect(await c.createChatTemplate(TEMPLATE_INPUT)).toEqual(template);
    expect(await c.getChatTemplateStatus('order_update')).toEqual(status);
    await c.syncChatTemplates();
    await c.deleteChatTemplate('order_update');
    expect(await c.sendChatMessage(TEXT)).toEqual(SENT);
    expect(await c.createChatCampaign(CAMPAIGN_REQUEST)).toEqual({ launched: true, campaign: CAMPAIGN });
    const rcs = {
      action: 'create_template',
      template_name: 'promo',
      template_type: 'text',
      bot_name: 'Shop',
      text: 'Hi {{name}}',
    } as const;
    expect(await c.createRcsTemplate(rcs)).toEqual({
      template: { template_name: 'promo', template_type: 'text', bot_name: 'Shop' },
    });
    const rcsCampaign = {
      template_name: 'promo',
      campaign_name: 'Promo 1',
      contacts: [{ mobile: '9876543210', params: { name: 'Ada' } }],
    };
    expect(await c.launchRcsCampaign(rcsCampaign)).toEqual({
      status: 'queued',
      campaign_id: 'r1',
      messages_queued: 1,
    });

    expect(p.seen.every((s) => s.auth === `Bearer ${TOKEN}`)).toBe(true);
    expect(p.seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'GET /v1/chat_templates?status=APPROVED&category=UTILITY',
      'POST /v1/chat_template_manager',
      'POST /v1/chat_template_manager',
      'POST /v1/chat_template_manager',
      'POST /v1/chat_template_manager',
      'POST /v1/chat_message_sender',
      'POST /v1/chat_campaign_creator',
      'POST /v1/rcs_template_manager',
      'POST /v1/rcs_campaign_launcher',
    ]);
    expect(p.seen.slice(1, 5).map((s) => s.body)).toEqual([
      { action: 'create', templateData: TEMPLATE_INPUT },
      { action: 'get_status', templateName: 'order_update' },
      { action: 'sync' },
      { action: 'delete', templateName: 'order_update' },
    ]);
    // The account goes in sender bodies; a request's own account wins.
    expect(p.seen[5]?.body).toEqual({ ...TEXT, account_id: 'acc-1' });
    await c.sendChatMessage({ ...TEXT, account_id: 'acc-2' });
    expect(p.seen.at(-1)?.body).toEqual({ ...TEXT, account_id: 'acc-2' });
    expect(p.seen[6]?.body).toEqual(CAMPAIGN_REQUEST);
  });

  it('a campaign saved with its launch failed (207) is surfaced with its id, and relaunched by id', async () => {
    const p = await provider((req, reply, n) =>
      n === 0
        ? answer(207, { success: true, campaign: { ...CAMPAIGN, status: 'saved' } })(req, reply)
        : answer(200, { success: true, campaign: CAMPAIGN })(req, reply),
    );
    const c = client(p.url);
    const saved = await c.createChatCampaign(CAMPAIGN_REQUEST);
    expect(saved.launched).toBe(false);
    expect(saved.campaign.id).toBe(CAMPAIGN.id);
    expect(await c.launchChatCampaign(saved.campaign.id)).toEqual({ launched: true, campaign: CAMPAIGN });
    expect(p.seen[1]).toMatchObject({ url: '/v1/chat_campaign_creator', body: { campaign_id: CAMPAIGN.id } });
  });
});

describe('messaging client: rate limits and retries', () => {
  it('130429 then 200: retried after a jittered backoff, and succeeds', async () => {
    const p = await provider((req, reply, n) =>
      (n === 0 ? networkError(400, 130429) : answer(200, SENT))(req, reply),
    );
    // random 0.5 with base 200: the first backoff is 100 ms.
    const c = client(p.url, { retryBaseMs: 200 });
    expect(await c.sendChatMessage(TEXT)).toEqual(SENT);
    expect(p.seen).toHaveLength(2);
    expect(p.seen[1]!.at - p.seen[0]!.at).toBeGreaterThanOrEqual(95);
  });

  it('133000 in a 200 answer is a rate limit too (the code counts, whatever the status)', async () => {
    const p = await provider((req, reply, n) =>
      (n === 0 ? networkError(200, 133000) : answer(200, SENT))(req, reply),
    );
    expect(await client(p.url).sendChatMessage(TEXT)).toEqual(SENT);
    expect(p.seen).toHaveLength(2);
  });

  it('130429 forever: too_many_requests after maxRateRetries retries, with growing waits', async () => {
    const p = await provider(networkError(429, 130429));
    const e = await failure(client(p.url, { maxRateRetries: 3, retryBaseMs: 40 }).sendChatMessage(TEXT));
    expect(e.code).toBe('too_many_requests');
    expect(e.status).toBe(429);
    expect(e.message).toMatch(/^provider chat send was rate-limited \(130429\) 4 times/);
    expect(p.seen).toHaveLength(4);
    // Ceilings 40, 80, 160 ms at random 0.5: waits of 20, 40, 80 ms.
    const gaps = p.seen.slice(1).map((s, i) => s.at - p.seen[i]!.at);
    expect(gaps[0]).toBeGreaterThanOrEqual(15);
    expect(gaps[2]).toBeGreaterThanOrEqual(75);
  });

  it('133000 again on the retry: too_many_requests after one retry, naming both meanings', async () => {
    const p = await provider(networkError(400, 133000));
    const e = await failure(client(p.url, { maxRateRetries: 5 }).sendChatMessage(TEXT));
    expect([e.code, e.status]).toEqual(['too_many_requests', 429]);
    expect(e.message).toBe(
      "provider chat send refused with 133000: more than 80 messages per second, or the account's messaging tier limit for 24 hours is reached",
    );
    // One retry only, however many maxRateRetries allows: a tier limit does not pass in a few seconds.
    expect(p.seen).toHaveLength(2);
  });

  it('500 once on an idempotent call: one retry, then the answer', async () => {
    const status = {
      id: 't1',
      template_name: 'order_update',
      status: 'APPROVED',
      rejection_reason: null,
      quality_score: 'GREEN',
    };
    const p = await provider((req, reply, n) =>
      (n === 0 ? answer(500, { error: 'boom' }) : answer(200, { success: true, template: status }))(
        req,
        reply,
      ),
    );
    expect(await client(p.url).getChatTemplateStatus('order_update')).toEqual(status);
    expect(p.seen).toHaveLength(2);
  });

  it('500 twice: 502 naming the call, no third attempt', async () => {
    const p = await provider(answer(500, { error: 'boom' }));
    const e = await failure(client(p.url).createChatCampaign(CAMPAIGN_REQUEST));
    expect([e.code, e.status]).toEqual(['upstream_bad_answer', 502]);
    expect(e.message).toBe('provider chat campaign create failed twice with status 500: boom');
    expect(p.seen).toHaveLength(2);
  });

  it('500 on a send or a launch is not retried: the first may have gone out', async () => {
    const p = await provider(answer(500, { error: 'boom' }));
    const c = client(p.url);
    const send = await failure(c.sendChatMessage(TEXT));
    expect([send.code, send.status]).toEqual(['upstream_bad_answer', 502]);
    expect(send.message).toBe(
      'provider chat send failed (500): the message may or may not have been sent; not retried: boom',
    );
    expect(p.seen).toHaveLength(1);
    const rcs = await failure(
      c.launchRcsCampaign({
        template_name: 'promo',
        campaign_name: 'Promo 1',
        contacts: [{ mobile: '9876543210' }],
      }),
    );
    expect([rcs.code, rcs.status]).toEqual(['upstream_bad_answer', 502]);
    expect(rcs.message).toMatch(/^provider rcs campaign launch failed \(500\): the campaign may or may not/);
    expect(p.seen).toHaveLength(2);
    const launch = await failure(c.launchChatCampaign(CAMPAIGN.id));
    expect(launch.message).toMatch(
      /^provider chat campaign launch failed \(500\): the campaign may or may not/,
    );
    expect(p.seen).toHaveLength(3);
  });

  it('503: backoff and retries, then 503 upstream_unavailable', async () => {
    const p = await provider(answer(503, { error: 'maintenance' }));
    const e = await failure(client(p.url, { maxUnavailableRetries: 2 }).sendChatMessage(TEXT));
    expect([e.code, e.status]).toEqual(['upstream_unavailable', 503]);
    expect(e.message).toBe('provider chat send is unavailable (503): maintenance');
    expect(p.seen).toHaveLength(3);
  });

  it('503 with Retry-After: waits as asked within the bound, or gives up at once past it', async () => {
    const p = await provider((req, reply, n) => {
      if (n === 0) reply.header('retry-after', '1');
      if (n === 2) reply.header('retry-after', '120');
      return (n === 1 ? answer(200, SENT) : answer(503, { error: 'busy' }))(req, reply);
    });
    const c = client(p.url);
    expect(await c.sendChatMessage(TEXT)).toEqual(SENT);
    expect(p.seen[1]!.at - p.seen[0]!.at).toBeGreaterThanOrEqual(990);
    const started = performance.now();
    const e = await failure(c.sendChatMessage(TEXT));
    expect(performance.now() - started).toBeLessThan(500);
    expect(e.code).toBe('upstream_unavailable');
    expect(e.message).toMatch(/asks to retry after 120 s$/);
    expect(p.seen).toHaveLength(3);
  });
});

describe('Retry-After', () => {
  it('reads delay-seconds and HTTP dates, and ignores the unreadable', () => {
    const now = Date.parse('2026-11-22T07:00:00Z');
    expect(retryAfterMs('3', now)).toBe(3_000);
    expect(retryAfterMs(['0'], now)).toBe(0);
    expect(retryAfterMs('Sun, 22 Nov 2026 07:00:05 GMT', now)).toBe(5_000);
    expect(retryAfterMs('Sun, 22 Nov 2026 06:59:00 GMT', now)).toBe(0);
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs('soon', now)).toBeUndefined();
  });
});

describe('messaging client: refusals', () => {
  it.each([
    [
      '402',
      'payment_required',
      402,
      /insufficient credits \(402\)/,
      answer(402, { error: 'Insufficient credits' }),
    ],
    [
      '131047',
      'window_closed',
      409,
      /24-hour conversation window is closed; send a template/,
      networkError(400, 131047),
    ],
    ['131026', 'message_rejected', 422, /code 131026 \(message undeliverable/, networkError(400, 131026)],
    ['131053', 'message_rejected', 422, /code 131053 \(media type mismatch/, networkError(400, 131053)],
    ['100', 'message_rejected', 422, /code 100 \(invalid parameter/, networkError(400, 100)],
    [
      '400',
      'bad_request',
      400,
      /\(400\): Invalid phone number$/,
      answer(400, { error: 'Invalid phone number' }),
    ],
    ['404', 'not_found', 404, /\(404\): Template not found$/, answer(404, { error: 'Template not found' })],
    [
      '409',
      'conflict',
      409,
      /\(409\): Campaign already exists$/,
      answer(409, { error: 'Campaign already exists' }),
    ],
    [
      '401',
      'upstream_bad_answer',
      502,
      /credentials \(401\): check MESSAGING_TOKEN/,
      answer(401, { error: 'expired' }),
    ],
    [
      '403',
      'upstream_bad_answer',
      502,
      /credentials \(403\): check MESSAGING_TOKEN/,
      answer(403, { error: 'no' }),
    ],
    ['418', 'upstream_bad_answer', 502, /unexpected status 418/, answer(418, {})],
  ] as const)('provider %s -> %s', async (_name, code, status, message, handler) => {
    const p = await provider(handler);
    const e = await failure(client(p.url).sendChatMessage(TEXT));
    expect([e.code, e.status]).toEqual([code, status]);
    expect(e.message).toMatch(/^provider chat send /);
    expect(e.message).toMatch(message);
    expect(p.seen).toHaveLength(1);
  });

  it('malformed or wrong-shape answers are 502', async () => {
    const p = await provider((req, reply, n) =>
      [
        answer(200, '{"success": tru'),
        answer(200, {
          success: true,
          data: { message_id: 'm1', wa_id: 'w', status: 'lost' },
          performance: { total_time_ms: 1 },
        }),
        answer(200, { success: false, error: 'odd' }),
        answer(200, { success: true, data: { templates: 'none' }, count: 0 }),
      ][n]!(req, reply),
    );
    const c = client(p.url);
    expect((await failure(c.sendChatMessage(TEXT))).message).toBe(
      'provider chat send answered with malformed JSON',
    );
    expect((await failure(c.sendChatMessage(TEXT))).message).toBe(
      'provider chat send answered with a bad send result: "data.status" is not one of sent, delivered, read, failed',
    );
    expect((await failure(c.sendChatMessage(TEXT))).message).toBe(
      'provider chat send answered 200 with success false: odd',
    );
    const e = await failure(c.listChatTemplates());
    expect([e.code, e.message]).toEqual([
      'upstream_bad_answer',
      'provider chat template list answered with a bad template list: "data.templates" is not an array',
    ]);
  });

  it('no answer within the bound is 504; an unreachable provider 503', async () => {
    const p = await provider(() => new Promise(() => {}));
    const e = await failure(client(p.url, { readTimeoutMs: 300 }).sendChatMessage(TEXT));
    expect([e.code, e.message]).toEqual([
      'upstream_timeout',
      'provider chat send did not answer within 300 ms',
    ]);
    const port = await closedPort();
    const u = await failure(client(`http://127.0.0.1:${port}/v1`).getChatTemplateStatus('order_update'));
    expect([u.code, u.message]).toEqual([
      'upstream_unavailable',
      'provider chat template status is unreachable (ECONNREFUSED)',
    ]);
  });

  it('logs failures without bodies, the token or the provider text, and times each call', async () => {
    const captured = captureLog('debug');
    const metrics = createMetrics();
    const p = await provider((req, reply, n) =>
      (n === 0 ? networkError(400, 130429) : answer(400, { error: `bad token ${TOKEN}` }))(req, reply),
    );
    const e = await failure(client(p.url, { log: captured.log, metrics }).sendChatMessage(TEXT));
    expect(e.message).toBe('provider chat send refused the request (400): bad token [redacted]');
    expect(captured.find(/provider call retried/)).toHaveLength(1);
    const text = JSON.stringify(captured.lines);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain('14155550100');
    expect(text).not.toContain('hello');
    expect(text).not.toContain('bad token');
    const m = await metrics.registry.getSingleMetricAsString('voicebridge_upstream_seconds');
    expect(m).toMatch(/voicebridge_upstream_seconds_count\{call="chat send",outcome="bad_request"\} 1/);
  });

  it('a refusal whose text holds a phone number is logged by call, outcome, status and code only', async () => {
    const captured = captureLog('debug');
    const p = await provider(
      answer(400, { error: 'Number 4915112345678 is unreachable', error_data: { code: 131026 } }),
    );
    const e = await failure(client(p.url, { log: captured.log }).sendChatMessage(TEXT));
    // The caller is told the provider's text; the log is not.
    expect(e.message).toContain('4915112345678');
    const [line, ...more] = captured.find(/provider call failed/);
    expect(more).toHaveLength(0);
    expect(line).toMatchObject({
      call: 'chat send',
      outcome: 'message_rejected',
      status: 400,
      network_code: 131026,
    });
    expect(
      Object.keys(line!)
        .filter((k) => !BASE_LOG_KEYS.has(k))
        .sort(),
    ).toEqual(['call', 'ms', 'network_code', 'outcome', 'status']);
    expect(JSON.stringify(captured.lines)).not.toContain('4915112345678');
  });
});

describe('messaging client: pacing', () => {
  it('a burst of 200 sends reaches the provider at no more than 80 in any rolling second, whatever the answer times', async () => {
    let seed = 5;
    const random = () => {
      seed = (seed * 48271) % 2147483647;
      return seed / 2147483647;
    };
    // Each answer comes 0 to 150 ms after its request arrives, the first 80 (on new connections)
    // 250 to 400 ms: sends that go out together reach the provider spread out, and the next ones
    // cannot make up for it.
    const p = await provider(async (_req, reply, n) => {
      const ms = n < 80 ? 250 + random() * 150 : random() * 150;
      await reach(performance.now() + ms);
      return answer(200, SENT)(_req, reply);
    });
    const admitted: number[] = [];
    const c = client(p.url, { readTimeoutMs: 10_000, onSendAdmitted: (at) => admitted.push(at) });
    const started = performance.now();
    const sends = Array.from({ length: 200 }, (_, i) =>
      c.sendChatMessage({ ...TEXT, message: { type: 'text', text: { body: `hello ${i}` } } }),
    );
    const results = await Promise.allSettled(sends);
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(admitted).toHaveLength(200);
    expect(p.seen).toHaveLength(200);
    // Counted by the provider's own arrival times, every rolling 1 s window, the first included.
    const arrivals = p.seen.map((s) => s.at);
    const most = maxInWindow(arrivals, 1_000);
    console.log(
      `200-send burst: max ${most} arrivals in any 1 s window, last arrival ${Math.round(Math.max(...arrivals) - started)} ms in`,
    );
    expect(most).toBeLessThanOrEqual(80);
    // 80 at once, then 80 more a second after their answers, then 40: the last arrives 2 s in at least.
    expect(admitted.filter((t) => t - started < 100)).toHaveLength(80);
    expect(Math.max(...arrivals) - started).toBeGreaterThanOrEqual(2_000);
  }, 20_000);

  it('a retry after 130429 takes a new slot, a second after the refusal came back', async () => {
    const p = await provider((req, reply, n) =>
      n === 0 ? networkError(429, 130429)(req, reply) : answer(200, SENT)(req, reply),
    );
    const admitted: number[] = [];
    const c = client(p.url, { sendsPerSecond: 1, onSendAdmitted: (at) => admitted.push(at) });
    await c.sendChatMessage(TEXT);
    expect(admitted).toHaveLength(2);
    expect(p.seen).toHaveLength(2);
    // The refusal came back before the retry's slot was free: its slot was held 1 s past it.
    expect(admitted[1]! - p.seen[0]!.at).toBeGreaterThanOrEqual(1_000);
  });

  it('a send that would wait for its slot past the bound is refused at once with too_many_requests', async () => {
    const p = await provider(answer(200, SENT));
    const c = client(p.url, { sendsPerSecond: 2, readTimeoutMs: 900 });
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => c.sendChatMessage(TEXT)));
    // Two at once, the next two a second later: past the 900 ms bound, refused without waiting.
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'rejected',
      'rejected',
    ]);
    const e = (results[2] as PromiseRejectedResult).reason as BridgeError;
    expect(e.code).toBe('too_many_requests');
    expect(e.message).toMatch(/paced at 2 per second/);
    expect(p.seen).toHaveLength(2);
  });
});

describe('messaging client: time left to each attempt', () => {
  it('a send is not admitted when its slot would leave it less than the minimum of the bound', async () => {
    const p = await provider(answer(200, SENT));
    // Bound 1.5 s, 600 ms kept for the attempt: the second send's slot, free a second after the first
    // answer, would leave it less than 600 ms, so it is refused at once instead of sent late.
    const c = client(p.url, { sendsPerSecond: 1, readTimeoutMs: 1_500, minAttemptMs: 600 });
    const started = performance.now();
    const results = await Promise.allSettled([c.sendChatMessage(TEXT), c.sendChatMessage(TEXT)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    const e = (results[1] as PromiseRejectedResult).reason as BridgeError;
    expect(e.code).toBe('too_many_requests');
    expect(performance.now() - started).toBeLessThan(500);
    expect(p.seen).toHaveLength(1);
  });

  it('a retry is not paused for when the pause would leave the next attempt less than the minimum', async () => {
    expect(MIN_ATTEMPT_MS).toBe(2_000);
    const p = await provider((_req, reply) =>
      answer(503, { error: 'busy' })(_req, reply.header('retry-after', '2')),
    );
    // Bound 3 s, half of it kept for an attempt: 2 s of pause leaves too little, so no retry.
    const c = client(p.url, { readTimeoutMs: 3_000 });
    const started = performance.now();
    const e = await failure(c.sendChatMessage(TEXT));
    expect(e.code).toBe('upstream_unavailable');
    expect(e.message).toMatch(/retry after 2 s$/);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(p.seen).toHaveLength(1);
  });

  it('a send that got no answer in time keeps its slot a further window', async () => {
    const p = await provider((req, reply, n) =>
      n === 0 ? new Promise(() => {}) : answer(200, SENT)(req, reply),
    );
    const c = client(p.url, { sendsPerSecond: 1, readTimeoutMs: 1_600, minAttemptMs: 100 });
    expect((await failure(c.sendChatMessage(TEXT))).code).toBe('upstream_timeout');
    const timedOut = performance.now();
    // Free 2 s after the timeout, not 1 s: past this send's 1.5 s of waiting, so refused at once.
    const e = await failure(c.sendChatMessage(TEXT));
    expect(e.code).toBe('too_many_requests');
    expect(p.seen).toHaveLength(1);
    await reach(timedOut + 2_000);
    await c.sendChatMessage(TEXT);
    expect(p.seen).toHaveLength(2);
  }, 10_000);

  it('a failing onSendAdmitted fails its send and gives its slot back', async () => {
    const p = await provider(answer(200, SENT));
    let calls = 0;
    const c = client(p.url, {
      sendsPerSecond: 1,
      onSendAdmitted: () => {
        calls++;
        if (calls === 1) throw new Error('observer failed');
      },
    });
    await expect(c.sendChatMessage(TEXT)).rejects.toThrow('observer failed');
    expect(p.seen).toHaveLength(0);
    // The slot is free a second after the failure; held for ever, this send would be refused.
    await expect(c.sendChatMessage(TEXT)).resolves.toMatchObject({ success: true });
    expect(calls).toBe(2);
    expect(p.seen).toHaveLength(1);
  });
});

describe('messaging client: close', () => {
  it('a send waiting for its slot is refused at once when the client closes', async () => {
    const p = await provider(answer(200, SENT));
    const c = client(p.url, { sendsPerSecond: 1 });
    await c.sendChatMessage(TEXT);
    const waiting = failure(c.sendChatMessage(TEXT));
    // Waiting for its slot, it is not sent (checked below).
    await quietFor(50, 'the waiting send to go out');
    const closedAt = performance.now();
    await c.close();
    const e = await waiting;
    expect([e.code, e.message]).toEqual(['upstream_unavailable', 'the messaging client is closed']);
    expect(performance.now() - closedAt).toBeLessThan(200);
    expect(p.seen).toHaveLength(1);
    expect((await failure(c.sendChatMessage(TEXT))).code).toBe('upstream_unavailable');
  });

  it('a pause between attempts ends when the client closes, and no timer of the client is left', async () => {
    const p = await provider((_req, reply) =>
      answer(503, { error: 'busy' })(_req, reply.header('retry-after', '3')),
    );
    const c = client(p.url, { readTimeoutMs: 10_000 });
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const pausing = failure(c.getChatTemplateStatus('order_update'));
    await waitFor(() => p.seen.length > 0, 2_000, 'the first attempt');
    // The 503 comes back and the pause begins: the client shows nothing of it but its timer.
    await reach(performance.now() + 50);
    // The pause's timer is running.
    const during = timers();
    expect(during).toBeGreaterThan(0);
    const closedAt = performance.now();
    await c.close();
    const e = await pausing;
    expect([e.code, e.message]).toEqual(['upstream_unavailable', 'the messaging client is closed']);
    expect(performance.now() - closedAt).toBeLessThan(200);
    expect(p.seen).toHaveLength(1);
    expect(timers()).toBeLessThan(during);
  });
});

describe('messaging client: answers whose shape the documents leave open', () => {
  it('an image send answered with the message id alone is taken; without one it is a 502', async () => {
    let body: unknown = { data: { message_id: 'img-1' } };
    const p = await provider((req, reply) => answer(200, body)(req, reply));
    const c = client(p.url);
    const image: ChatSendRequest = {
      to: '14155550100',
      message: { type: 'image', image: { link: 'https://cdn.example/a.png' } },
    };
    expect((await c.sendChatMessage(image)).data.message_id).toBe('img-1');
    body = { success: true, data: {} };
    expect((await failure(c.sendChatMessage(image))).code).toBe('upstream_bad_answer');
    // A text send's answer is the one chat.md shows: it is checked whole.
    body = { data: { message_id: 'txt-1' } };
    expect((await failure(c.sendChatMessage(TEXT))).message).toMatch(/"success" is not a boolean/);
  });

  it('template list entries may hold any fields; a 207 campaign need hold only its id', async () => {
    const p = await provider((req, reply) =>
      req.url.startsWith('/v1/chat_templates')
        ? answer(200, { success: true, data: { templates: [{ name: 'x', extra: 1 }, 'odd'] }, count: 2 })(
            req,
            reply,
          )
        : answer(207, { success: true, campaign: { id: 'c-9' } })(req, reply),
    );
    const c = client(p.url);
    expect((await c.listChatTemplates()).templates).toEqual([{ name: 'x', extra: 1 }, 'odd']);
    expect(await c.createChatCampaign(CAMPAIGN_REQUEST)).toEqual({
      launched: false,
      campaign: { id: 'c-9' },
    });
  });

  it('an RCS template create answered 200 is created whatever its body: empty, no success flag, success false', async () => {
    const bodies: unknown[] = ['', { message: 'ok' }, { success: false }, { template: null }];
    let n = 0;
    const p = await provider((req, reply) => answer(200, bodies[n++])(req, reply));
    const c = client(p.url);
    const t = {
      action: 'create_template',
      template_name: 'promo',
      template_type: 'text',
      bot_name: 'Shop',
      text: 'Hi',
    } as const;
    for (let i = 0; i < bodies.length; i++) {
      expect(await c.createRcsTemplate(t)).toEqual({
        template: { template_name: 'promo', template_type: 'text', bot_name: 'Shop' },
      });
    }
    expect(p.seen).toHaveLength(bodies.length);
  });
});
