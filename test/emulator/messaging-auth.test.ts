import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import { createEmulator, type Emulator } from '../../src/emulator/server.js';
import { createLogger } from '../../src/log.js';
import { call } from '../helpers/http-call.js';

const SECRET = 'messaging-auth-secret';
const KEY = `vbk_${'ab'.repeat(16)}`;

const template = (name: string) => ({
  action: 'create',
  templateData: {
    name,
    category: 'UTILITY',
    language: 'en_US',
    components: [{ type: 'BODY', text: 'Your order {{1}} has shipped' }],
    sample_values: { '1': 'A-1' },
  },
});

describe('messaging emulator: the three credentials and the account_id rules', () => {
  let emu: Emulator;
  let url: string;
  beforeAll(async () => {
    emu = await createEmulator({
      jwtSecret: SECRET,
      log: createLogger('silent'),
      messaging: { apiKey: KEY, reviewDelayMs: -1 },
    });
    url = await emu.listen(0);
  });
  afterAll(async () => {
    await emu.close();
  });

  const list = (token?: string, query = '') =>
    call(url, 'GET', `/v1/chat_templates${query}`, token === undefined ? {} : { token });

  it('accepts the default API key, the default account token and a JWT naming the account', async () => {
    expect(emu.messaging.defaultApiKey).toBe(KEY);
    for (const token of [
      KEY,
      emu.messaging.defaultAccountToken,
      await mintToken({ secret: SECRET, tenant: 'default' }),
    ]) {
      const r = await list(token);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ success: true, data: { templates: [] }, count: 0 });
    }
  });

  it('401 with the messaging error body: missing, malformed, wrong prefix, unknown, bad JWT', async () => {
    const cases: [string | undefined, RegExp][] = [
      [undefined, /missing bearer token/],
      ['vbk_123', /malformed API key/],
      [`vbk_${'AB'.repeat(16)}`, /malformed API key/],
      [`sk_${'ab'.repeat(16)}`, /not an API key/],
      [`vbk_${'cd'.repeat(16)}`, /unknown API key/],
      [randomUUID(), /unknown account token/],
      [await mintToken({ secret: 'another-secret', tenant: 'default' }), /bad signature/],
      [await mintToken({ secret: SECRET, tenant: 'default', ttlSeconds: -10 }), /expired/],
    ];
    for (const [token, message] of cases) {
      const r = await list(token);
      expect(r.status, String(token)).toBe(401);
      expect(r.body.success).toBe(false);
      expect(r.body.error).toMatch(message);
    }
  });

  it('a JWT for a new tenant gets an account of its own on first use', async () => {
    const token = await mintToken({ secret: SECRET, tenant: 'tenant-b' });
    const r = await call(url, 'POST', '/v1/chat_template_manager', { token, body: template('jwt_only') });
    expect(r.status).toBe(200);
    expect(emu.messaging.state.accounts.get('tenant-b')?.chatTemplates.has('jwt_only')).toBe(true);
  });

  it('revoked and expired keys and tokens are refused with 401, through the control API', async () => {
    const ws = (await call(url, 'POST', '/emulator/messaging/workspaces', { body: { accounts: 1 } }))
      .body as {
      api_key: string;
      accounts: { account_id: string; account_token: string }[];
    };
    expect(ws.api_key).toMatch(/^vbk_[0-9a-f]{32}$/);
    const token = ws.accounts[0]!.account_token;
    expect((await list(ws.api_key)).status).toBe(200);
    expect((await list(token)).status).toBe(200);

    expect(
      (await call(url, 'POST', '/emulator/messaging/tokens/revoke', { body: { token: ws.api_key } })).status,
    ).toBe(200);
    const revoked = await list(ws.api_key);
    expect(revoked.status).toBe(401);
    expect(revoked.body.error).toMatch(/revoked/);

    await call(url, 'POST', '/emulator/messaging/tokens/expire', { body: { token, in_ms: 0 } });
    const expired = await list(token);
    expect(expired.status).toBe(401);
    expect(expired.body.error).toMatch(/expired/);
    expect(
      (await call(url, 'POST', '/emulator/messaging/tokens/revoke', { body: { token: 'nope' } })).status,
    ).toBe(404);
  });

  it('403 for a template name of another account; 404 for a name nobody has', async () => {
    const other = (await call(url, 'POST', '/emulator/messaging/workspaces', { body: {} })).body as {
      api_key: string;
    };
    const made = await call(url, 'POST', '/v1/chat_template_manager', {
      token: other.api_key,
      body: template('theirs_only'),
    });
    expect(made.status).toBe(200);
    for (const action of ['get_status', 'delete']) {
      const r = await call(url, 'POST', '/v1/chat_template_manager', {
        token: KEY,
        body: { action, templateName: 'theirs_only' },
      });
      expect(r.status, action).toBe(403);
      expect(r.body.success).toBe(false);
    }
    const none = await call(url, 'POST', '/v1/chat_template_manager', {
      token: KEY,
      body: { action: 'get_status', templateName: 'nobody_has' },
    });
    expect(none.status).toBe(404);
    // Still theirs, untouched.
    const own = await call(url, 'POST', '/v1/chat_template_manager', {
      token: other.api_key,
      body: { action: 'get_status', templateName: 'theirs_only' },
    });
    expect(own.status).toBe(200);
  });

  it('account_id: optional with one linked account, required with two, refused with an account token', async () => {
    const ws = (await call(url, 'POST', '/emulator/messaging/workspaces', { body: { accounts: 2 } }))
      .body as {
      api_key: string;
      accounts: { account_id: string; account_token: string }[];
    };
    const [a1, a2] = ws.accounts;
    const send = (token: string, extra: Record<string, unknown>) =>
      call(url, 'POST', '/v1/chat_message_sender', {
        token,
        body: { to: '14155550123', message: { type: 'text', text: { body: 'hi' } }, ...extra },
      });
    // Open the customer's window on both accounts so a text send can succeed.
    for (const a of ws.accounts) emu.messaging.inbound(a.account_id, '14155550123');

    const missing = await send(ws.api_key, {});
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatch(/account_id is required/);
    expect((await send(ws.api_key, { account_id: a2!.account_id })).status).toBe(200);

    const withToken = await send(a1!.account_token, { account_id: a1!.account_id });
    expect(withToken.status).toBe(400);
    expect(withToken.body.error).toMatch(/account_id must not be sent with an account API token/);
    expect((await send(a1!.account_token, {})).status).toBe(200);

    // A key used for an account its workspace does not link: rejected as the token of another account.
    const foreign = await send(KEY, { account_id: a1!.account_id });
    expect(foreign.status).toBe(401);
    expect((await send(KEY, { account_id: 'acct_unknown' })).status).toBe(404);

    emu.messaging.inbound('default', '14155550123');
    expect((await send(KEY, {})).status).toBe(200);
    const jwt = await mintToken({ secret: SECRET, tenant: 'default' });
    expect((await send(jwt, {})).status).toBe(200);
    const sends = emu.messaging.stats().sends.map((s) => s.account_id);
    expect(sends.filter((id) => id === a2!.account_id)).toHaveLength(1);
    expect(sends.filter((id) => id === a1!.account_id)).toHaveLength(1);
  });
});
