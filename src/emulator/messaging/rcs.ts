import type { FastifyInstance } from 'fastify';
import type { RcsCampaignResult, RcsTemplateCreated } from '../../messaging/types.js';
import {
  checkContactsAgainstTemplate,
  rcsTemplateVariables,
  validateRcsCampaignRequest,
  validateRcsTemplate,
} from '../../messaging/validate.js';
import { accountOf } from './accounts.js';
import { CAMPAIGN_BODY_LIMIT, launchCampaign, saveCampaign } from './campaigns.js';
import { callerOf, type MessagingContext } from './context.js';
import { ApiError, badRequest, bodyOf } from './errors.js';
import type { RcsTemplateRecord } from './state.js';

export function registerRcs(app: FastifyInstance, ctx: MessagingContext): void {
  const { state } = ctx;

  app.post('/rcs_template_manager', async (req): Promise<RcsTemplateCreated> => {
    const b = bodyOf(req.body);
    const a = accountOf(state, await callerOf(ctx, req), b.account_id);
    const { account_id: _, ...rest } = b;
    const template = validateRcsTemplate(rest);
    if (a.rcsTemplates.has(template.template_name)) {
      throw new ApiError(409, `template ${template.template_name} already exists`);
    }
    const t: RcsTemplateRecord = {
      accountId: a.id,
      template,
      variables: rcsTemplateVariables(template),
      createdAt: new Date().toISOString(),
    };
    a.rcsTemplates.set(template.template_name, t);
    return {
      success: true,
      template: {
        template_name: template.template_name,
        template_type: template.template_type,
        bot_name: template.bot_name,
        created_at: t.createdAt,
      },
    };
  });

  app.post(
    '/rcs_campaign_launcher',
    { bodyLimit: CAMPAIGN_BODY_LIMIT },
    async (req): Promise<RcsCampaignResult> => {
      const b = bodyOf(req.body);
      const a = accountOf(state, await callerOf(ctx, req), b.account_id);
      const { account_id: _, ...rest } = b;
      const r = validateRcsCampaignRequest(rest);
      const t = a.rcsTemplates.get(r.template_name);
      if (t === undefined) {
        // rcs.md: an unknown template_name is a 400.
        throw badRequest(
          `unknown template_name ${JSON.stringify(r.template_name)}: no RCS template of that exact name in this account`,
        );
      }
      checkContactsAgainstTemplate(r.contacts, t.variables);
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
    },
  );
}
