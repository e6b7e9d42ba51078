/**
 * The messaging emulator's control API under `/emulator/messaging/`: no auth (a loopback development
 * tool). Workspaces and accounts, token revocation and expiry, credits and tier, template review,
 * inbound messages and the 24-hour window, undeliverable numbers, button taps, a failing launch, the
 * webhook URL and bearer token (shown masked, never the token), and the statistics tests read back.
 */
import type { FastifyInstance } from 'fastify';
import { badRequest, bodyOf } from './errors.js';

const str = (b: Record<string, unknown>, field: string): string => {
  const v = b[field];
  if (typeof v !== 'string' || v === '') throw badRequest(`${field} is required: a non-empty string`);
  return v;
};

const num = (b: Record<string, unknown>, field: string): number | undefined => {
  const v = b[field];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw badRequest(`${field} must be a number`);
  return v;
};

type Params = Record<string, string>;

/**
 * What the control routes ask of the emulator (`MessagingEmulator` in emulator.ts, which registers them):
 * declared here, so the routes need not import the emulator that imports them. Answers pass through as
 * the response bodies.
 */
export interface EmulatorControls {
  createWorkspace(accounts: number): { readonly accounts: readonly { readonly account_id: string }[] };
  revoke(token: string): void;
  expire(token: string, inMs: number): void;
  accountView(id: string): unknown;
  setAccount(id: string, o: { credits?: number | null; tier?: number }): unknown;
  review(accountId: string, templateName: string, status: string, reason?: string): unknown;
  inbound(accountId: string, from: string, text: string | undefined, ageMs: number): unknown;
  setUndeliverable(numbers: readonly string[], undeliverable: boolean): unknown;
  tap(messageId: string, buttonId: string): unknown;
  failNextLaunch(count: number): number;
  readonly webhookView: unknown;
  setWebhook(url: string | undefined, token?: string): void;
  stats(accountId?: string): unknown;
}

export function registerControl(app: FastifyInstance, emu: EmulatorControls): void {
  app.post('/workspaces', async (req) => {
    const b = req.body === undefined ? {} : bodyOf(req.body);
    const ws = emu.createWorkspace(num(b, 'accounts') ?? 1);
    const credits = b.credits;
    const tier = num(b, 'tier');
    if (credits !== undefined || tier !== undefined) {
      for (const a of ws.accounts) {
        emu.setAccount(a.account_id, {
          ...(credits !== undefined ? { credits: credits as number | null } : {}),
          ...(tier !== undefined ? { tier } : {}),
        });
      }
    }
    return ws;
  });

  app.post('/tokens/revoke', async (req) => {
    emu.revoke(str(bodyOf(req.body), 'token'));
    return { revoked: true };
  });

  app.post('/tokens/expire', async (req) => {
    const b = bodyOf(req.body);
    const inMs = num(b, 'in_ms') ?? 0;
    emu.expire(str(b, 'token'), inMs);
    return { expires_at: new Date(Date.now() + inMs).toISOString() };
  });

  app.get('/accounts/:id', async (req) => emu.accountView((req.params as Params).id!));

  app.patch('/accounts/:id', async (req) => {
    const b = bodyOf(req.body);
    const tier = num(b, 'tier');
    if (b.credits !== undefined && b.credits !== null && typeof b.credits !== 'number') {
      throw badRequest('credits must be a number, or null for unlimited');
    }
    return emu.setAccount((req.params as Params).id!, {
      ...(b.credits !== undefined ? { credits: b.credits as number | null } : {}),
      ...(tier !== undefined ? { tier } : {}),
    });
  });

  app.post('/accounts/:id/templates/:name/review', async (req) => {
    const b = bodyOf(req.body);
    const p = req.params as Params;
    const reason = b.reason === undefined ? undefined : str(b, 'reason');
    return emu.review(p.id!, p.name!, str(b, 'status'), reason);
  });

  app.post('/accounts/:id/inbound', async (req) => {
    const b = bodyOf(req.body);
    const text = b.text === undefined ? undefined : str(b, 'text');
    const message = emu.inbound((req.params as Params).id!, str(b, 'from'), text, num(b, 'ageMs') ?? 0);
    return { message };
  });

  app.post('/undeliverable', async (req) => {
    const b = bodyOf(req.body);
    const numbers = b.numbers;
    if (!Array.isArray(numbers) || numbers.some((n) => typeof n !== 'string')) {
      throw badRequest('numbers is required: an array of number strings');
    }
    if (b.undeliverable !== undefined && typeof b.undeliverable !== 'boolean') {
      throw badRequest('undeliverable must be true or false');
    }
    return { undeliverable: emu.setUndeliverable(numbers as string[], b.undeliverable !== false) };
  });

  app.post('/tap', async (req) => {
    const b = bodyOf(req.body);
    return { posted: emu.tap(str(b, 'message_id'), str(b, 'button_id')) };
  });

  app.post('/campaigns/fail-next-launch', async (req) => {
    const b = req.body === undefined ? {} : bodyOf(req.body);
    const count = num(b, 'count') ?? 1;
    if (!Number.isInteger(count) || count < 0) throw badRequest('count must be a whole number >= 0');
    return { fail_next_launches: emu.failNextLaunch(count) };
  });

  // The URL is shown with any ?token= value masked, and the token never: this API has no auth.
  app.get('/webhook', async () => emu.webhookView);

  app.put('/webhook', async (req) => {
    const b = bodyOf(req.body);
    if (b.url !== null && typeof b.url !== 'string') {
      throw badRequest('url is required: an http or https URL, or null to stop posting');
    }
    if (b.token !== undefined && b.token !== null && typeof b.token !== 'string') {
      throw badRequest('token must be a string (sent as "Authorization: Bearer <token>"), or null for none');
    }
    emu.setWebhook(b.url === null ? undefined : b.url, typeof b.token === 'string' ? b.token : undefined);
    return emu.webhookView;
  });

  app.get('/stats', async (req) => {
    const q = (req.query ?? {}) as Record<string, unknown>;
    return emu.stats(typeof q.account_id === 'string' ? q.account_id : undefined);
  });
}
