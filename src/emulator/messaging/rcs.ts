/**
 * rcs.md under `/v1`: `POST /rcs_template_manager` (create) and `POST /rcs_campaign_launcher`, checked
 * against the emulator's own tables (documents.ts).
 */
import type { FastifyInstance } from 'fastify';
import { accountOf } from './accounts.js';
import { CAMPAIGN_BODY_LIMIT, launchCampaign, saveCampaign } from './campaigns.js';
import { callerOf, type MessagingContext } from './context.js';
import { rcsCampaignRequest, rcsTemplate, rcsVariables } from './documents-rcs.js';
import { ApiError, bodyOf } from './errors.js';
import type { RcsTemplateRecord } from './state.js';

export function registerRcs(app: FastifyInstance, ctx: MessagingContext): void {
  const { state } = ctx;

  app.post('/rcs_template_manager', async (req) => {
    const b = bodyOf(req.body);
    const a = accountOf(state, await callerOf(ctx, req), b.account_id);
    const { account_id: _, ...rest } = b;
    const template = rcsTemplate(rest);
    if (a.rcsTemplates.has(template.template_name)) {
      throw new ApiError(409, `template ${template.template_name} already exists`);
    }
    const t: RcsTemplateRecord = {
      accountId: a.id,
      template,
      variables: rcsVariables(template),
      createdAt: new Date().toISOString(),
    };
    a.rcsTemplates.set(template.template_name, t);
    // rcs.md: "Response 200 means the template was created. Body shape of the creation response: not
    // shown." A short acknowledgement, no `success` flag: a client must take the 200 alone as success.
    return { message: `template ${template.template_name} created` };
  });

  app.post('/rcs_campaign_launcher', { bodyLimit: CAMPAIGN_BODY_LIMIT }, async (req) => {
    const b = bodyOf(req.body);
    const a = accountOf(state, await callerOf(ctx, req), b.account_id);
    const { account_id: _, ...rest } = b;
    const r = rcsCampaignRequest(rest, (name) => a.rcsTemplates.get(name)?.variables);
    const c = saveCampaign(state, a, {
      channel: 'rcs',
      name: r.campaign_name,
      templateName: r.template_name,
      recipients: r.contacts.map((x) => ({
        to: x.mobile,
        ...(x.params !== undefined ? { params: x.params } : {}),
      })),
    });
    launchCampaign(state, ctx.fanOut, c);
    return { status: 'queued', campaign_id: c.id, messages_queued: c.recipients.length };
  });
}
