/**
 * Template and campaign management under `/v1/messaging/` (scope `messages:manage`): forwarded to the
 * provider as they are, checked first by the messaging validators (400 naming the field).
 *
 * `messages:manage` is an operator's scope, not a tenant's: every tenant's messages go through the one
 * provider messaging account the bridge holds (MESSAGING_TOKEN), so these routes list, create, delete
 * and launch the templates and campaigns of that account, whichever tenant the token names. Only the
 * records of a campaign's messages are the token tenant's.
 *
 * A campaign the bridge launches is recorded for the token tenant, one pending send per recipient (as
 * the webhook will name it: chat digits, RCS 10 digits), each taking the message id of the first
 * webhook event for its recipient: `GET /v1/messages/{id}` then shows it (kind `campaign`). A chat
 * campaign saved but not launched (207) is held, and recorded when a relaunch launches it.
 */
import type { FastifyBaseLogger, FastifyInstance, RouteShorthandOptions } from 'fastify';
import type { RestVerifier } from '../auth/jwt.js';
import type { BridgeContext } from '../context.js';
import { principal, scopeGuard } from '../control/guard.js';
import { BEARER, errorResponses } from '../control/schemas.js';
import { BridgeError, invalidField } from '../errors.js';
import type { CampaignSends, MessageStore } from './records.js';
import { type MessagingClient, TEMPLATE_CATEGORIES, TEMPLATE_STATUSES } from './types.js';
import {
  validateChatCampaignRequest,
  validateChatTemplateInput,
  validateRcsCampaignRequest,
  validateRcsTemplate,
} from './validate.js';

const NAME_PARAMS = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 512, description: 'a template name' },
  },
  required: ['name'],
} as const;

const CAMPAIGN_ID_PARAMS = {
  type: 'object',
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 256, description: 'a campaign id' },
  },
  required: ['id'],
} as const;

/** Said on every management route: what the scope reaches. */
const OPERATOR_ONLY =
  "Operator scope (messages:manage): every tenant shares the bridge's one provider messaging account (MESSAGING_TOKEN), so this route reads or changes that account's templates and campaigns for all tenants; grant it to operators only.";

/** Management bodies are checked by the messaging validators (400 naming the field), not by a schema. */
const ANY_OBJECT = { type: 'object', description: 'see the provider document', additionalProperties: true };
const ANY_ANSWER = { type: 'object', additionalProperties: true };

/**
 * Largest campaign body: about 30,000 audience rows of a phone and two short values. Above the general
 * BODY_LIMIT_BYTES (64 KB, some 1,000 rows) because an audience list is data, not a person's request;
 * bounded because the body is parsed on the thread that paces every call's audio (1 MiB of JSON takes
 * milliseconds). Larger audiences go as several campaigns.
 */
export const CAMPAIGN_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

export function messagingOf(ctx: BridgeContext): MessagingClient {
  if (ctx.messaging === undefined) {
    throw new BridgeError(
      'upstream_unavailable',
      'no messaging provider is configured: set MESSAGING_BASE_URL and MESSAGING_TOKEN',
    );
  }
  return ctx.messaging;
}

export function registerManagement(scope: FastifyInstance, ctx: BridgeContext, verify: RestVerifier): void {
  const guard = scopeGuard(verify, 'messages:manage');
  const upstream = [400, 401, 402, 403, 404, 409, 422, 429, 502, 503, 504] as const;
  const opts = (
    summary: string,
    extra: Record<string, unknown> = {},
    ok: Record<number, unknown> = {},
  ): RouteShorthandOptions => ({
    onRequest: guard,
    schema: {
      tags: ['messaging'],
      summary,
      description: OPERATOR_ONLY,
      security: BEARER,
      ...extra,
      response: { 200: ANY_ANSWER, ...ok, ...errorResponses(...upstream) },
    },
  });
  const client = () => messagingOf(ctx);

  scope.get(
    '/v1/messaging/chat/templates',
    opts('List the chat templates (filter by status, category)', {
      querystring: {
        type: 'object',
        properties: {
          status: { type: 'string', enum: TEMPLATE_STATUSES, description: TEMPLATE_STATUSES.join(', ') },
          category: {
            type: 'string',
            enum: TEMPLATE_CATEGORIES,
            description: TEMPLATE_CATEGORIES.join(', '),
          },
        },
      },
    }),
    async (req) => {
      const q = req.query as {
        status?: (typeof TEMPLATE_STATUSES)[number];
        category?: (typeof TEMPLATE_CATEGORIES)[number];
      };
      return client().listChatTemplates({
        ...(q.status === undefined ? {} : { status: q.status }),
        ...(q.category === undefined ? {} : { category: q.category }),
      });
    },
  );

  scope.post(
    '/v1/messaging/chat/templates',
    opts('Create a chat template (submitted for review: PENDING)', { body: ANY_OBJECT }, { 201: ANY_ANSWER }),
    async (req, reply) => {
      // The body is the template itself (the provider's templateData).
      const input = validateChatTemplateInput(req.body, 'templateData');
      const template = await client().createChatTemplate(input);
      return reply.code(201).send({ template });
    },
  );

  scope.post(
    '/v1/messaging/chat/templates/sync',
    opts('Pull the latest template statuses from the network operator'),
    async (_req, reply) => {
      await client().syncChatTemplates();
      return reply.code(204).send();
    },
  );

  scope.get(
    '/v1/messaging/chat/templates/:name',
    opts("A chat template's review status", { params: NAME_PARAMS }),
    async (req) => ({
      template: await client().getChatTemplateStatus((req.params as { name: string }).name),
    }),
  );

  scope.delete(
    '/v1/messaging/chat/templates/:name',
    opts('Delete a chat template (not while an active campaign uses it)', { params: NAME_PARAMS }),
    async (req, reply) => {
      await client().deleteChatTemplate((req.params as { name: string }).name);
      return reply.code(204).send();
    },
  );

  scope.post(
    '/v1/messaging/chat/campaigns',
    {
      ...opts(
        'Send an approved template to an audience list; 207 when saved but not launched',
        { body: ANY_OBJECT },
        { 207: ANY_ANSWER },
      ),
      bodyLimit: Math.max(ctx.config.bodyLimitBytes, CAMPAIGN_BODY_LIMIT_BYTES),
    },
    async (req, reply) => {
      const request = validateChatCampaignRequest(req.body);
      checkRecipients(ctx.messages, 'audience_rows', request.audience_rows.length);
      const requestedAt = Date.now();
      const result = await client().createChatCampaign(request);
      const campaign: CampaignSends = {
        tenant: principal(req).tenant,
        channel: 'chat',
        campaign_id: result.campaign.id,
        recipients: request.audience_rows.map((row) => row.phone),
        sent_at: new Date().toISOString(),
        requested_at_ms: requestedAt,
      };
      await (result.launched
        ? record(ctx.messages, req.log, campaign)
        : ctx.messages.saveCampaign(campaign).catch(logStoreFailure(req.log, campaign.campaign_id)));
      return reply.code(result.launched ? 200 : 207).send(result);
    },
  );

  scope.post(
    '/v1/messaging/chat/campaigns/:id/launch',
    opts(
      'Retry the launch of a campaign saved with its launch failed (207)',
      { params: CAMPAIGN_ID_PARAMS },
      { 207: ANY_ANSWER },
    ),
    async (req, reply) => {
      const { id } = req.params as { id: string };
      const requestedAt = Date.now();
      const result = await client().launchChatCampaign(id);
      if (result.launched) {
        await ctx.messages.launchSavedCampaign(id, requestedAt, new Date().toISOString()).then(
          (records) => {
            if (records === undefined) {
              req.log.info({ campaign_id: id }, 'campaign launched, but its recipients were not held here');
            }
          },
          (err: unknown) => {
            // The saved recipients were taken for the launch: a retry has nothing to record.
            req.log.warn(
              { campaign_id: id, err: (err as Error).message },
              'launched campaign not recorded: its held recipients are gone, its messages will have no records',
            );
          },
        );
      }
      return reply.code(result.launched ? 200 : 207).send(result);
    },
  );

  scope.post(
    '/v1/messaging/rcs/templates',
    opts('Create an RCS template (text, standalone or carousel)', { body: ANY_OBJECT }, { 201: ANY_ANSWER }),
    async (req, reply) => {
      // `action` is the provider's; it may be left out here.
      const template = validateRcsTemplate({ action: 'create_template', ...(req.body as object) });
      return reply.code(201).send(await client().createRcsTemplate(template));
    },
  );

  scope.post(
    '/v1/messaging/rcs/campaigns',
    {
      ...opts('Launch an RCS template to a contact list (10-digit mobiles)', { body: ANY_OBJECT }),
      bodyLimit: Math.max(ctx.config.bodyLimitBytes, CAMPAIGN_BODY_LIMIT_BYTES),
    },
    async (req) => {
      const request = validateRcsCampaignRequest(req.body);
      checkRecipients(ctx.messages, 'contacts', request.contacts.length);
      const requestedAt = Date.now();
      const result = await client().launchRcsCampaign(request);
      await record(ctx.messages, req.log, {
        tenant: principal(req).tenant,
        channel: 'rcs',
        campaign_id: result.campaign_id,
        recipients: request.contacts.map((c) => c.mobile),
        sent_at: new Date().toISOString(),
        requested_at_ms: requestedAt,
      });
      return result;
    },
  );
}

/**
 * A campaign of more recipients than the store holds pending sends for is refused (400) before the
 * provider is asked: its records, or a call's RCS send waiting, would be dropped. Larger audiences go as
 * several campaigns.
 */
function checkRecipients(messages: MessageStore, field: string, count: number): void {
  const max = messages.maxCampaignRecipients;
  if (count > max) {
    throw invalidField(
      field,
      `at most ${max.toLocaleString('en-US')} recipients per campaign (send a larger audience as several campaigns)`,
      `${count.toLocaleString('en-US')} recipients`,
    );
  }
}

/** The campaign was launched (or saved): a store that cannot record it costs its records, not the launch. */
async function record(messages: MessageStore, log: FastifyBaseLogger, campaign: CampaignSends) {
  const outcome = await messages.recordCampaign(campaign).catch(logStoreFailure(log, campaign.campaign_id));
  if (outcome !== undefined && outcome.skipped > 0) {
    // How many, never which numbers.
    log.info(
      { campaign_id: campaign.campaign_id, skipped: outcome.skipped },
      "campaign recipients not recorded: a call's RCS send to them waits for its first event",
    );
  }
}

function logStoreFailure(log: FastifyBaseLogger, campaignId: string) {
  return (err: unknown): undefined => {
    log.warn(
      { campaign_id: campaignId, err: (err as Error).message },
      'campaign not recorded: its messages will have no records',
    );
    return undefined;
  };
}
