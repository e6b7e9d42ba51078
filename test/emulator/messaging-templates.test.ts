import { afterEach, describe, expect, it } from 'vitest';
import { createEmulator, type Emulator } from '../../src/emulator/server.js';
import { createLogger } from '../../src/log.js';
import { call } from '../helpers/http-call.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const SECRET = 'messaging-templates-secret';

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

async function start(messaging: Record<string, unknown>): Promise<{ url: string; key: string }> {
  emu = await createEmulator({ jwtSecret: SECRET, log: createLogger('silent'), messaging });
  return { url: await emu.listen(0), key: emu.messaging.defaultApiKey };
}

const templateData = (name: string, category = 'UTILITY', body = 'Hello {{1}}') => ({
  name,
  category,
  language: 'en_US',
  components: [{ type: 'BODY', text: body }],
  ...(body.includes('{{1}}') ? { sample_values: { '1': 'Ann' } } : {}),
});

describe('messaging emulator: chat templates', () => {
  it('create answers PENDING; the review approves it after reviewDelayMs; get_status shows the score', async () => {
    const { url, key } = await start({ reviewDelayMs: 300 });
    const manage = (body: unknown) => call(url, 'POST', '/v1/chat_template_manager', { token: key, body });
    const created = await manage({ action: 'create', templateData: templateData('order_shipped') });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      success: true,
      template: {
        template_name: 'order_shipped',
        status: 'PENDING',
        category: 'UTILITY',
        language: 'en_US',
      },
    });
    expect(typeof created.body.message).toBe('string');
    const tpl = created.body.template as { id: string; created_at: string };
    expect(tpl.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(tpl.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);

    const pending = await manage({ action: 'get_status', templateName: 'order_shipped' });
    expect(pending.body).toEqual({
      success: true,
      template: {
        id: tpl.id,
        template_name: 'order_shipped',
        status: 'PENDING',
        rejection_reason: null,
        quality_score: 'UNKNOWN',
      },
    });
    const started = Date.now();
    await waitFor(
      async () => {
        const r = await manage({ action: 'get_status', templateName: 'order_shipped' });
        return (r.body.template as { status: string }).status !== 'PENDING';
      },
      5_000,
      'the review',
      20,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    const approved = await manage({ action: 'get_status', templateName: 'order_shipped' });
    expect(approved.body.template).toMatchObject({
      status: 'APPROVED',
      rejection_reason: null,
      quality_score: 'GREEN',
    });
    expect((await manage({ action: 'sync' })).body).toEqual({ success: true, synced: 1 });
  });

  it('the review can reject; with -1 only a control call reviews, at once, with a reason', async () => {
    let { url, key } = await start({ reviewDelayMs: 50, reviewOutcome: 'reject' });
    await call(url, 'POST', '/v1/chat_template_manager', {
      token: key,
      body: { action: 'create', templateData: templateData('promo_one', 'MARKETING') },
    });
    await waitFor(
      () =>
        emu!.messaging.state.accounts.get('default')!.chatTemplates.get('promo_one')!.status === 'REJECTED',
      3_000,
      'the automatic rejection',
    );
    await emu!.close();

    ({ url, key } = await start({ reviewDelayMs: -1 }));
    await call(url, 'POST', '/v1/chat_template_manager', {
      token: key,
      body: { action: 'create', templateData: templateData('promo_two', 'MARKETING') },
    });
    await quietFor(100, 'a review with reviews off');
    const still = await call(url, 'POST', '/v1/chat_template_manager', {
      token: key,
      body: { action: 'get_status', templateName: 'promo_two' },
    });
    expect((still.body.template as { status: string }).status).toBe('PENDING');
    const review = await call(
      url,
      'POST',
      '/emulator/messaging/accounts/default/templates/promo_two/review',
      {
        body: { status: 'REJECTED', reason: 'promotional content in a utility slot' },
      },
    );
    expect(review.status).toBe(200);
    const after = await call(url, 'POST', '/v1/chat_template_manager', {
      token: key,
      body: { action: 'get_status', templateName: 'promo_two' },
    });
    expect(after.body.template).toMatchObject({
      status: 'REJECTED',
      rejection_reason: 'promotional content in a utility slot',
      quality_score: 'UNKNOWN',
    });
    const bad = await call(url, 'POST', '/emulator/messaging/accounts/default/templates/promo_two/review', {
      body: { status: 'MAYBE' },
    });
    expect(bad.status).toBe(400);
  });

  it('names are never reusable, even after delete (409); delete then get_status is 404', async () => {
    const { url, key } = await start({ reviewDelayMs: -1 });
    const manage = (body: unknown) => call(url, 'POST', '/v1/chat_template_manager', { token: key, body });
    expect((await manage({ action: 'create', templateData: templateData('welcome_note') })).status).toBe(200);
    const dup = await manage({ action: 'create', templateData: templateData('welcome_note') });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ success: false, error: 'Template already exists' });
    const del = await manage({ action: 'delete', templateName: 'welcome_note' });
    expect(del.status).toBe(200);
    expect(del.body.success).toBe(true);
    expect((await manage({ action: 'get_status', templateName: 'welcome_note' })).status).toBe(404);
    expect((await manage({ action: 'delete', templateName: 'welcome_note' })).status).toBe(404);
    expect((await manage({ action: 'create', templateData: templateData('welcome_note') })).status).toBe(409);
  });

  it('validation refusals are 400 with the message; the wrong shape is named', async () => {
    const { url, key } = await start({ reviewDelayMs: -1 });
    const manage = (body: unknown) => call(url, 'POST', '/v1/chat_template_manager', { token: key, body });
    const noAction = await manage({ templateData: templateData('x_y') });
    expect(noAction.status).toBe(400);
    expect(noAction.body).toEqual({ success: false, error: 'action is required' });
    const noData = await manage({ action: 'create', name: 'x_y' });
    expect(noData.status).toBe(400);
    expect(noData.body.error).toBe('templateData is required');
    const upper = await manage({ action: 'create', templateData: templateData('Bad Name') });
    expect(upper.status).toBe(400);
    expect(upper.body.success).toBe(false);
  });

  it('GET /chat_templates filters by status and category; 100 per minute, then 429 with 133000', async () => {
    const { url, key } = await start({ reviewDelayMs: -1 });
    for (const [name, cat] of [
      ['alpha_one', 'UTILITY'],
      ['beta_two', 'MARKETING'],
      ['gamma_three', 'MARKETING'],
    ] as const) {
      await call(url, 'POST', '/v1/chat_template_manager', {
        token: key,
        body: { action: 'create', templateData: templateData(name, cat) },
      });
    }
    emu!.messaging.review('default', 'beta_two', 'APPROVED');
    const get = (q: string) => call(url, 'GET', `/v1/chat_templates${q}`, { token: key });
    const all = await get('');
    expect(all.body.count).toBe(3);
    const entry = (all.body.data as { templates: Record<string, unknown>[] }).templates[0]!;
    expect(Object.keys(entry).sort()).toEqual(
      [
        'category',
        'components',
        'created_at',
        'id',
        'language',
        'rejection_reason',
        'status',
        'template_name',
      ].sort(),
    );
    const names = (r: { body: Record<string, unknown> }) =>
      (r.body.data as { templates: { template_name: string }[] }).templates.map((t) => t.template_name);
    expect(names(await get('?status=APPROVED'))).toEqual(['beta_two']);
    expect(names(await get('?category=MARKETING'))).toEqual(['beta_two', 'gamma_three']);
    expect(names(await get('?status=PENDING&category=MARKETING'))).toEqual(['gamma_three']);
    expect((await get('?status=LIVE')).status).toBe(400);
    // 5 requests so far; the rest of the minute's 100 pass, the 101st is refused.
    for (let i = 5; i < 100; i++) expect((await get('')).status).toBe(200);
    const limited = await get('');
    expect(limited.status).toBe(429);
    expect(limited.body.error_data).toMatchObject({ code: 133000 });
  });
});
