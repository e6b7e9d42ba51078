/**
 * The messaging emulator: chat.md and rcs.md under `/v1`, the control API under `/emulator/messaging/`,
 * and the same controls as methods for in-process tests.
 */
import type { FastifyInstance } from 'fastify';
import type { RestVerifier } from '../../auth/jwt.js';
import type { Logger } from '../../log.js';
import { API_KEY_PATTERN, createWorkspace } from './accounts.js';
import { FanOut } from './campaigns.js';
import { registerChat, reviewTemplate } from './chat.js';
import { DEFAULT_MESSAGING_SETTINGS, type MessagingContext, type MessagingSettings } from './context.js';
import { registerControl } from './control.js';
import { Delivery } from './delivery.js';
import { ApiError, badRequest, messagingErrorHandler } from './errors.js';
import { registerRcs } from './rcs.js';
import { type Account, MessagingState, type SendRecord, type WebhookStats } from './state.js';
import { WebhookPoster } from './webhooks.js';
import type { ChatWebhookPayload, RcsButtonClickEvent } from './wire.js';

export interface MessagingOptions extends Partial<MessagingSettings> {
  /** API key of the default workspace (`vbk_` + 32 hex); generated when absent. */
  readonly apiKey?: string;
  /** Where webhook posts go; none are made until one is set. */
  readonly webhookUrl?: string;
  /**
   * Sent with each webhook post as `Authorization: Bearer <token>`: the receiver's secret stays out of
   * the URL, which the control API shows.
   */
  readonly webhookToken?: string;
}

export const DEFAULT_ACCOUNT_ID = 'default';

export interface WorkspaceView {
  readonly workspace_id: string;
  readonly api_key: string;
  readonly accounts: { readonly account_id: string; readonly account_token: string }[];
}

export interface AccountView {
  readonly account_id: string;
  readonly workspace_id: string;
  readonly credits: number | null;
  readonly tier: number;
  readonly sent_total: number;
  readonly sent_last_24h: number;
}

export interface MessagingStats {
  readonly accounts: AccountView[];
  /** Sends in order (filtered by account when asked). */
  readonly sends: SendRecord[];
  readonly webhooks: WebhookStats & { readonly pending: number };
}

/** Reads and checks the settings once; every problem in one message. */
function settingsOf(o: MessagingOptions): MessagingSettings {
  const s = { ...DEFAULT_MESSAGING_SETTINGS };
  for (const k of Object.keys(s) as (keyof MessagingSettings)[]) {
    if (o[k] !== undefined) (s as Record<string, unknown>)[k] = o[k];
  }
  const problems: string[] = [];
  const whole = (k: keyof MessagingSettings, min: number) => {
    const v = s[k];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min)
      problems.push(`${k} must be an integer >= ${min}, got ${v}`);
  };
  whole('reviewDelayMs', -1);
  whole('deliveryDelayMs', 0);
  whole('readDelayMs', -1);
  whole('campaignRatePerSecond', 1);
  whole('webhookMaxAttempts', 1);
  whole('webhookBackoffMs', 0);
  whole('webhookConcurrency', 1);
  if (s.reviewOutcome !== 'approve' && s.reviewOutcome !== 'reject') {
    problems.push(`reviewOutcome must be "approve" or "reject", got ${String(s.reviewOutcome)}`);
  }
  if (o.apiKey !== undefined && !API_KEY_PATTERN.test(o.apiKey)) {
    problems.push('apiKey must be "vbk_" followed by 32 lowercase hex characters');
  }
  if (o.webhookUrl !== undefined) {
    try {
      checkWebhookUrl(o.webhookUrl);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (o.webhookToken !== undefined) {
    try {
      checkWebhookToken(o.webhookToken);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (problems.length > 0) throw new Error(`messaging emulator settings: ${problems.join('; ')}`);
  return Object.freeze(s);
}

function checkWebhookUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw badRequest(`webhook url must be an http or https URL, got ${JSON.stringify(url)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw badRequest(`webhook url must be an http or https URL, got ${JSON.stringify(url)}`);
  }
  return url;
}

/** A bearer token: visible ASCII, no spaces (it goes into a header as it is). */
function checkWebhookToken(token: string): string {
  if (!/^[\x21-\x7e]{1,4096}$/.test(token)) {
    throw badRequest(
      'webhook token must be 1 to 4096 visible ASCII characters, no spaces (it is sent as a bearer token)',
    );
  }
  return token;
}

/** The webhook URL with the value of any `token` query parameter replaced by `****`. */
export function maskedWebhookUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url;
  }
  if (!u.searchParams.has('token')) return url;
  const params = [...u.searchParams].map(([k, v]) => [k, k === 'token' ? '****' : v] as [string, string]);
  u.search = new URLSearchParams(params).toString();
  return u.toString();
}

export class MessagingEmulator {
  readonly state = new MessagingState();
  readonly settings: MessagingSettings;
  readonly defaultApiKey: string;
  readonly defaultAccountId = DEFAULT_ACCOUNT_ID;
  readonly defaultAccountToken: string;
  readonly #ctx: MessagingContext;

  constructor(options: MessagingOptions, verify: RestVerifier, log: Logger) {
    this.settings = settingsOf(options);
    const s = this.settings;
    const ws = createWorkspace(this.state, 1, {
      workspaceId: 'default',
      accountIds: [DEFAULT_ACCOUNT_ID],
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
    });
    this.defaultApiKey = ws.apiKey;
    this.defaultAccountToken = ws.accounts[0]!.account_token;
    this.state.webhookUrl = options.webhookUrl;
    this.state.webhookToken = options.webhookToken;
    const hooks = new WebhookPoster({
      concurrency: s.webhookConcurrency,
      maxAttempts: s.webhookMaxAttempts,
      backoffMs: s.webhookBackoffMs,
      stats: this.state.webhook,
      url: () => this.state.webhookUrl,
      token: () => this.state.webhookToken,
      log,
    });
    const delivery = new Delivery(this.state, hooks, {
      deliveryDelayMs: s.deliveryDelayMs,
      readDelayMs: s.readDelayMs,
    });
    const fanOut = new FanOut(this.state, delivery, s.campaignRatePerSecond);
    this.#ctx = { state: this.state, verify, delivery, fanOut, hooks, settings: s, timers: new Set() };
  }

  /** Registers the API routes (under `/v1`) and the control routes, with the messaging error body. */
  register(app: FastifyInstance): void {
    void app.register(async (scope) => {
      scope.setErrorHandler(messagingErrorHandler);
      await scope.register(
        async (v1) => {
          registerChat(v1, this.#ctx);
          registerRcs(v1, this.#ctx);
        },
        { prefix: '/v1' },
      );
      await scope.register(async (c) => registerControl(c, this), { prefix: '/emulator/messaging' });
    });
  }

  #account(id: string): Account {
    const a = this.state.accounts.get(id);
    if (a === undefined) throw new ApiError(404, `account ${id} not found`);
    return a;
  }

  createWorkspace(accounts = 1): WorkspaceView {
    if (!Number.isInteger(accounts) || accounts < 1 || accounts > 100) {
      throw badRequest(`accounts must be 1 to 100, got ${accounts}`);
    }
    const ws = createWorkspace(this.state, accounts);
    return { workspace_id: ws.workspace.id, api_key: ws.apiKey, accounts: ws.accounts };
  }

  #credential(token: string) {
    const c = this.state.credentials.get(token);
    if (c === undefined) throw new ApiError(404, 'no such API key or account token');
    return c;
  }

  revoke(token: string): void {
    this.#credential(token).revoked = true;
  }

  /** The key or token is refused from `inMs` from now (0: at once). */
  expire(token: string, inMs = 0): void {
    this.#credential(token).expiresAt = Date.now() + inMs;
  }

  accountView(id: string): AccountView {
    const a = this.#account(id);
    return {
      account_id: a.id,
      workspace_id: a.workspaceId,
      credits: a.credits,
      tier: a.tier,
      sent_total: a.sentTotal,
      sent_last_24h: this.state.sentToday(a),
    };
  }

  setAccount(id: string, o: { credits?: number | null; tier?: number }): AccountView {
    const a = this.#account(id);
    if (o.credits !== undefined) {
      if (o.credits !== null && (!Number.isInteger(o.credits) || o.credits < 0)) {
        throw badRequest(`credits must be a whole number >= 0 or null (unlimited), got ${o.credits}`);
      }
      a.credits = o.credits;
      a.reserved = 0;
    }
    if (o.tier !== undefined) {
      if (o.tier !== 1 && o.tier !== 2 && o.tier !== 3 && o.tier !== 4) {
        throw badRequest(`tier must be 1, 2, 3 or 4, got ${o.tier}`);
      }
      a.tier = o.tier;
    }
    return this.accountView(id);
  }

  /** Approves or rejects a pending (or any) chat template now. */
  review(accountId: string, templateName: string, status: string, reason?: string) {
    const t = this.#account(accountId).chatTemplates.get(templateName);
    if (t === undefined || t.deleted) throw new ApiError(404, `template ${templateName} not found`);
    if (status !== 'APPROVED' && status !== 'REJECTED') {
      throw badRequest(`status must be "APPROVED" or "REJECTED", got ${JSON.stringify(status)}`);
    }
    reviewTemplate(this.#ctx, t, status, reason);
    return { template_name: templateName, status: t.status, rejection_reason: t.rejectionReason };
  }

  /** A customer's inbound message, `ageMs` ago: opens (or backdates) the 24-hour window. */
  inbound(accountId: string, from: string, text = 'hello', ageMs = 0) {
    if (!/^[0-9]{8,15}$/.test(from))
      throw badRequest(`from must be digits with the country code, got ${JSON.stringify(from)}`);
    if (!Number.isFinite(ageMs) || ageMs < 0) throw badRequest(`ageMs must be >= 0, got ${ageMs}`);
    return this.#ctx.delivery.inbound(this.#account(accountId), from, text, ageMs);
  }

  setUndeliverable(numbers: readonly string[], undeliverable = true): string[] {
    for (const n of numbers) {
      if (undeliverable) this.state.undeliverable.add(n);
      else this.state.undeliverable.delete(n);
    }
    return [...this.state.undeliverable];
  }

  tap(messageId: string, buttonId: string): ChatWebhookPayload | RcsButtonClickEvent {
    return this.#ctx.delivery.tap(messageId, buttonId);
  }

  /** The next `count` chat campaign launches fail: saved, answered 207. */
  failNextLaunch(count = 1): number {
    this.state.failNextLaunches = count;
    return count;
  }

  /** Where webhooks go, as set (a `?token=` included): for in-process use, never served. */
  get webhookUrl(): string | undefined {
    return this.state.webhookUrl;
  }

  /** What the control API shows of the webhook: the URL with any `token` value masked, never a token. */
  get webhookView(): { readonly url: string | null; readonly token_set: boolean } {
    const url = this.state.webhookUrl;
    return {
      url: url === undefined ? null : maskedWebhookUrl(url),
      token_set: this.state.webhookToken !== undefined,
    };
  }

  /**
   * Where webhooks go (undefined: nowhere) and the bearer token sent with them (undefined: none). Both
   * are replaced.
   */
  setWebhook(url: string | undefined, token?: string): void {
    const checkedUrl = url === undefined ? undefined : checkWebhookUrl(url);
    const checkedToken = token === undefined ? undefined : checkWebhookToken(token);
    this.state.webhookUrl = checkedUrl;
    this.state.webhookToken = checkedUrl === undefined ? undefined : checkedToken;
  }

  /** Sets the URL only, keeping the token. */
  setWebhookUrl(url: string | undefined): void {
    this.state.webhookUrl = url === undefined ? undefined : checkWebhookUrl(url);
  }

  stats(accountId?: string): MessagingStats {
    const accounts = [...this.state.accounts.keys()]
      .filter((id) => accountId === undefined || id === accountId)
      .map((id) => this.accountView(id));
    return {
      accounts,
      sends: this.state.sends.filter((s) => accountId === undefined || s.account_id === accountId),
      webhooks: { ...this.state.webhook, pending: this.#ctx.hooks.pending },
    };
  }

  /** Campaign recipients, status timers and webhook posts still to go. */
  get pending(): number {
    return this.#ctx.fanOut.pending + this.#ctx.delivery.pending + this.#ctx.hooks.pending;
  }

  async close(): Promise<void> {
    this.#ctx.fanOut.close();
    this.#ctx.delivery.close();
    for (const t of this.#ctx.timers) clearTimeout(t);
    this.#ctx.timers.clear();
    await this.#ctx.hooks.close();
  }
}
