/**
 * chat.md under `/v1`: `GET /chat_templates`, `POST /chat_template_manager` (create, get_status, sync,
 * delete, with the operator's review after `reviewDelayMs`), `POST /chat_message_sender` (the 24-hour
 * window, 80 requests/s, the tier and credits) and `POST /chat_campaign_creator`.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { accountOf, admitList, admitSend, assertRoom } from './accounts.js';
import { CAMPAIGN_BODY_LIMIT, launchCampaign, saveCampaign } from './campaigns.js';
import { callerOf, type MessagingContext } from './context.js';
import { chatMessageId } from './delivery.js';
import {
  bodyValues,
  bodyVariables,
  campaignRequest,
  sendRequest,
  templateManagerRequest,
} from './documents.js';
import { ApiError, badRequest, bodyOf } from './errors.js';
import { type Account, type CampaignRecord, type ChatTemplateRecord, DAY_MS } from './state.js';
import {
  type ChatMessage,
  NETWORK_ERRORS,
  TEMPLATE_CATEGORIES,
  TEMPLATE_STATUSES,
  type TemplateStatus,
} from './wire.js';

export function templateView(t: ChatTemplateRecord) {
  return {
    id: t.id,
    template_name: t.input.name,
    status: t.status,
    category: t.category,
    language: t.input.language,
    created_at: t.createdAt,
  };
}

export function templateStatusView(t: ChatTemplateRecord) {
  return {
    id: t.id,
    template_name: t.input.name,
    status: t.status,
    rejection_reason: t.rejectionReason,
    quality_score: t.status === 'APPROVED' ? 'GREEN' : 'UNKNOWN',
  };
}

function entryView(t: ChatTemplateRecord) {
  return { ...templateView(t), rejection_reason: t.rejectionReason, components: t.input.components };
}

/** Moves a pending template to APPROVED or REJECTED (the operator's review, or a control call). */
export function reviewTemplate(
  ctx: MessagingContext,
  t: ChatTemplateRecord,
  status: Exclude<TemplateStatus, 'PENDING'>,
  reason?: string,
): void {
  if (t.reviewTimer !== undefined) {
    clearTimeout(t.reviewTimer);
    ctx.timers.delete(t.reviewTimer);
    t.reviewTimer = undefined;
  }
  t.status = status;
  t.rejectionReason = status === 'REJECTED' ? (reason ?? 'rejected by the network operator review') : null;
}

/** The account's template of the name: 403 when it is another account's, 404 when nobody's. */
function ownTemplate(ctx: MessagingContext, a: Account, name: string): ChatTemplateRecord {
  const t = a.chatTemplates.get(name);
  if (t !== undefined && !t.deleted) return t;
  if (ctx.state.chatTemplateElsewhere(a.id, name) !== undefined) {
    throw new ApiError(403, `template ${name} belongs to another account: this token does not own it`);
  }
  throw new ApiError(404, `template ${name} not found`);
}

/** An APPROVED template of the account, by its exact name (404, or 400 while not approved). */
function approvedTemplate(a: Account, name: string): ChatTemplateRecord {
  const t = a.chatTemplates.get(name);
  if (t === undefined || t.deleted) {
    throw new ApiError(
      404,
      `template ${name} not found in this account (names are exact and case-sensitive)`,
    );
  }
  if (t.status !== 'APPROVED') {
    throw badRequest(`template ${name} is ${t.status}: only an APPROVED template can be sent`);
  }
  return t;
}

function filterValue<T extends string>(v: unknown, field: string, allowed: readonly T[]): T | undefined {
  if (v === undefined || v === '') return undefined;
  const s = typeof v === 'string' ? v.toUpperCase() : '';
  if (!(allowed as readonly string[]).includes(s)) {
    throw badRequest(`${field} must be one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`);
  }
  return s as T;
}

export function registerChat(app: FastifyInstance, ctx: MessagingContext): void {
  const { state } = ctx;

  app.get('/chat_templates', async (req) => {
    const q = (req.query ?? {}) as Record<string, unknown>;
    const a = accountOf(state, await callerOf(ctx, req), q.account_id);
    admitList(a);
    const status = filterValue(q.status, 'status', TEMPLATE_STATUSES);
    const category = filterValue(q.category, 'category', TEMPLATE_CATEGORIES);
    const templates = [...a.chatTemplates.values()]
      .filter((t) => !t.deleted && (status === undefined || t.status === status))
      .filter((t) => category === undefined || t.category === category)
      .map(entryView);
    return { success: true, data: { templates }, count: templates.length };
  });

  app.post('/chat_template_manager', async (req) => {
    const b = bodyOf(req.body);
    const a = accountOf(state, await callerOf(ctx, req), b.account_id);
    const { account_id: _, ...rest } = b;
    const r = templateManagerRequest(rest);
    switch (r.action) {
      case 'create': {
        const input = r.templateData;
        if (a.chatTemplates.has(input.name)) throw new ApiError(409, 'Template already exists');
        const t: ChatTemplateRecord = {
          id: randomUUID(),
          accountId: a.id,
          input,
          category: input.category,
          bodyVariables: bodyVariables(input.components),
          createdAt: new Date().toISOString(),
          status: 'PENDING',
          rejectionReason: null,
          deleted: false,
        };
        a.chatTemplates.set(input.name, t);
        const delay = ctx.settings.reviewDelayMs;
        if (delay >= 0) {
          const timer = setTimeout(() => {
            ctx.timers.delete(timer);
            t.reviewTimer = undefined;
            if (t.status === 'PENDING' && !t.deleted) {
              reviewTemplate(ctx, t, ctx.settings.reviewOutcome === 'approve' ? 'APPROVED' : 'REJECTED');
            }
          }, delay);
          timer.unref();
          ctx.timers.add(timer);
          t.reviewTimer = timer;
        }
        return {
          success: true,
          template: templateView(t),
          message: `Template ${input.name} submitted for review`,
        };
      }
      case 'get_status':
        return { success: true, template: templateStatusView(ownTemplate(ctx, a, r.templateName)) };
      case 'sync': {
        let synced = 0;
        for (const t of a.chatTemplates.values()) if (!t.deleted) synced++;
        return { success: true, synced };
      }
      case 'delete': {
        const t = ownTemplate(ctx, a, r.templateName);
        const running = state.activeCampaignOf(a.id, r.templateName);
        if (running !== undefined) {
          throw new ApiError(
            409,
            `template ${r.templateName} is in use by the active campaign ${running.name}: it cannot be deleted until the campaign has finished`,
          );
        }
        if (t.reviewTimer !== undefined) {
          clearTimeout(t.reviewTimer);
          ctx.timers.delete(t.reviewTimer);
          t.reviewTimer = undefined;
        }
        // The name stays taken: names are never reusable.
        t.deleted = true;
        return { success: true, message: `Template ${r.templateName} deleted` };
      }
    }
  });

  app.post('/chat_message_sender', async (req) => {
    const started = performance.now();
    const b = bodyOf(req.body);
    const a = accountOf(state, await callerOf(ctx, req), b.account_id);
    const admittedAt = admitSend(a);
    const { to, message } = sendRequest(b);
    // Every type the sender takes is free-form: within 24 hours of the customer's last message only.
    const last = a.lastInbound.get(to);
    if (last === undefined || Date.now() - last > DAY_MS) {
      throw badRequest(
        `Re-engagement required: the 24-hour window with ${to} is closed (no inbound message from them in the last 24 hours); send a template message`,
        NETWORK_ERRORS.reEngagementRequired,
      );
    }
    assertRoom(state, a, 1);
    const m = {
      id: chatMessageId(),
      channel: 'chat' as const,
      accountId: a.id,
      to,
      message: message as ChatMessage,
    };
    // Recorded at its admission: the records then hold the sliding window exactly as it was counted.
    state.recordSend(a, m, admittedAt);
    ctx.delivery.track(m);
    return {
      success: true,
      data: { message_id: m.id, wa_id: to, status: 'sent' },
      performance: { total_time_ms: Math.round(performance.now() - started) },
    };
  });

  app.post('/chat_campaign_creator', { bodyLimit: CAMPAIGN_BODY_LIMIT }, async (req, reply) => {
    const b = bodyOf(req.body);
    const a = accountOf(state, await callerOf(ctx, req), b.account_id);
    if (b.campaign_id !== undefined) {
      // Ours: relaunch a campaign saved with its launch failed (HTTP 207).
      const c = typeof b.campaign_id === 'string' ? state.campaigns.get(b.campaign_id) : undefined;
      if (c === undefined || c.channel !== 'chat')
        throw new ApiError(404, `campaign ${b.campaign_id} not found`);
      if (c.accountId !== a.id) throw new ApiError(403, 'this token does not own the campaign');
      if (c.status !== 'saved') throw new ApiError(409, `campaign ${c.name} is already ${c.status}`);
      approvedTemplate(a, c.templateName);
      launchCampaign(state, ctx.fanOut, c);
      return { success: true, campaign: campaignView(c) };
    }
    const { account_id: _, ...rest } = b;
    const r = campaignRequest(rest);
    const t = approvedTemplate(a, r.template_name);
    const values = bodyValues(r, t.bodyVariables);
    const c = saveCampaign(state, a, {
      channel: 'chat',
      name: r.campaign_name,
      templateName: r.template_name,
      recipients: r.rows.map((row, i) => ({ to: row.phone, bodyParams: values[i]! })),
    });
    if (state.failNextLaunches > 0) {
      state.failNextLaunches--;
      return reply.code(207).send({
        success: true,
        campaign: campaignView(c),
        message: 'campaign saved, but its automatic launch failed: retry with {"campaign_id": id}',
      });
    }
    launchCampaign(state, ctx.fanOut, c);
    return { success: true, campaign: campaignView(c) };
  });
}

export function campaignView(c: CampaignRecord) {
  return {
    id: c.id,
    campaign_name: c.name,
    template_name: c.templateName,
    status: c.status === 'saved' ? 'saved' : 'launched',
    total_recipients: c.recipients.length,
    queued_at: c.queuedAt,
  };
}
