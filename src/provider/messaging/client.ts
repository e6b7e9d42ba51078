/**
 * Typed client of the provider's messaging APIs (shared/provider-api/chat.md and rcs.md), on the same
 * HTTP plumbing as the voice client (../http.ts).
 *
 * Every request is validated locally first (./validate.ts): a bad one never reaches the provider.
 * Sends are paced by a token bucket at the sender's 80 per second. The whole call, its wait for a send
 * slot and its retries included, is bounded by `readTimeoutMs`.
 *
 * Failure mapping, each message naming the provider call that failed:
 * - network code 130429 or 133000 (in `error_data.code`, whatever the status), or HTTP 429 -> retried
 *   with full-jitter backoff up to `maxRateRetries` times, then 429 too_many_requests
 * - 500 -> retried once, then 502 upstream_bad_answer
 * - 503 -> retried after `Retry-After` or a jittered backoff while the bound allows, then
 *   503 upstream_unavailable
 * - 131047 -> 409 window_closed; 131026, 131053, 100 -> 422 message_rejected
 * - 402 -> payment_required; 400 -> bad_request, 404 -> not_found, 409 -> conflict, with the provider's
 *   `error` text; 401/403 -> 502 upstream_bad_answer (the bridge's credentials were refused)
 * - no answer in time -> 504 upstream_timeout; unreachable -> 503 upstream_unavailable
 * - malformed JSON, a wrong shape, an unexpected status -> 502 upstream_bad_answer
 */
import { BridgeError, invalidField } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import { createAgent, type Exchange, exchange } from '../http.js';
import type { ShapeCheck } from '../types.js';
import { backoffMs, delay, TokenBucket } from './rate.js';
import {
  type ChatCampaign,
  type ChatCampaignResult,
  type ChatSendResult,
  type ChatTemplate,
  type ChatTemplateEntry,
  type ChatTemplateStatus,
  MESSAGE_STATUSES,
  type MessagingClient,
  NETWORK_ERRORS,
  RCS_TEMPLATE_TYPES,
  type RcsCampaignResult,
  type RcsTemplateCreated,
  TEMPLATE_CATEGORIES,
  TEMPLATE_STATUSES,
} from './types.js';
import {
  parseTemplateManagerRequest,
  validateChatCampaignRequest,
  validateChatSendRequest,
  validateChatTemplateInput,
  validateRcsCampaignRequest,
  validateRcsTemplate,
} from './validate.js';

export interface MessagingClientOptions {
  /** Base address including the version segment, e.g. `https://messaging.example/v1`. */
  readonly baseUrl: string;
  /** Bearer token (MESSAGING_TOKEN). */
  readonly token: string | undefined;
  /** Sent as `account_id` in sender bodies that do not carry their own. */
  readonly accountId?: string;
  readonly connectTimeoutMs: number;
  /** Bound on one whole call: its wait for a send slot, its attempts and the pauses between them. */
  readonly readTimeoutMs: number;
  /** Pace of `chat_message_sender` requests (80, the documented limit). */
  readonly sendsPerSecond?: number;
  /** Retries of a rate-limited call (130429, 133000, 429) before too_many_requests (5). */
  readonly maxRateRetries?: number;
  /** Retries of a provider 503 before upstream_unavailable (2). */
  readonly maxUnavailableRetries?: number;
  /** First backoff ceiling, doubled per retry (250 ms); also the pause before the one retry of a 500. */
  readonly retryBaseMs?: number;
  /** Largest backoff ceiling (8 s). */
  readonly retryCapMs?: number;
  /** Uniform in [0, 1): the jitter source, injectable for tests. */
  readonly random?: () => number;
  readonly metrics?: Metrics;
  /** Failed and retried calls are logged here (call, outcome, duration; never bodies or tokens). */
  readonly log?: Logger;
}

interface MessagingCall {
  readonly name: string;
  readonly shape: string;
  readonly check: ShapeCheck;
  /** The answer's shape is not documented: any 2xx, even empty, is success. */
  readonly anyAnswer?: boolean;
  /** 207 is an answer (the campaign creator's "saved, launch failed"). */
  readonly allow207?: boolean;
  /** Paced by the send token bucket. */
  readonly paced?: boolean;
}

const RATE_CODES: ReadonlySet<number> = new Set([
  NETWORK_ERRORS.rateLimitHit,
  NETWORK_ERRORS.rateLimitExceeded,
]);
const REJECTED: Readonly<Record<number, string>> = {
  [NETWORK_ERRORS.undeliverable]: 'message undeliverable: number unreachable or blocked',
  [NETWORK_ERRORS.mediaTypeMismatch]: 'media type mismatch: the MIME type does not match the file extension',
  [NETWORK_ERRORS.invalidParameter]: 'invalid parameter: check the template structure and parameters',
};

/** One attempt's outcome that the loop acts on; everything else is thrown where it is found. */
type Attempt =
  | { kind: 'value'; status: number; value: unknown }
  | { kind: 'rate'; code: number }
  | { kind: 'server'; message: string }
  | { kind: 'unavailable'; retryAfterMs: number | undefined; message: string };

export function createMessagingClient(options: MessagingClientOptions): MessagingClient {
  const base = options.baseUrl.replace(/\/+$/, '');
  const perSecond = options.sendsPerSecond ?? 80;
  const maxRateRetries = options.maxRateRetries ?? 5;
  const maxUnavailableRetries = options.maxUnavailableRetries ?? 2;
  const retryBaseMs = options.retryBaseMs ?? 250;
  const retryCapMs = options.retryCapMs ?? 8_000;
  const random = options.random ?? Math.random;
  const bucket = new TokenBucket({ perSecond, burst: perSecond });
  const agent = createAgent(options);

  async function call(
    c: MessagingCall,
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<{ status: number; value: unknown }> {
    const started = performance.now();
    const deadline = started + options.readTimeoutMs;
    let outcome = 'ok';
    let rateRetries = 0;
    let unavailableRetries = 0;
    let serverFailures = 0;
    /** Waits `ms` before the next attempt if the bound leaves time for it; false when it does not. */
    const pause = async (ms: number, why: string): Promise<boolean> => {
      if (performance.now() + ms >= deadline) return false;
      options.log?.info({ call: c.name, why, waitMs: Math.round(ms) }, 'provider call retried');
      await delay(ms);
      return true;
    };
    try {
      for (;;) {
        if (c.paced) {
          const wait = bucket.tryTake(deadline - performance.now());
          if (wait === undefined) {
            throw new BridgeError(
              'too_many_requests',
              `provider ${c.name} not sent: sends are paced at ${perSecond} per second and this one would wait past the ${options.readTimeoutMs} ms bound`,
            );
          }
          if (wait > 0) await delay(wait);
        }
        const res = await exchange(agent, c.name, options, {
          method,
          url: `${base}${path}`,
          token: options.token,
          body,
          deadline,
        });
        const a = classify(c, res);
        switch (a.kind) {
          case 'value':
            return a;
          case 'rate': {
            rateRetries++;
            const wait = backoffMs(rateRetries - 1, retryBaseMs, retryCapMs, random);
            if (rateRetries > maxRateRetries || !(await pause(wait, `rate limit ${a.code}`))) {
              throw new BridgeError(
                'too_many_requests',
                `provider ${c.name} was rate-limited (${a.code}) ${rateRetries} time${rateRetries === 1 ? '' : 's'}, ${rateRetries > maxRateRetries ? 'more than the retries allowed' : 'with no time left to retry'}; slow to ${perSecond} per second or lower`,
              );
            }
            break;
          }
          case 'server':
            serverFailures++;
            if (serverFailures > 1 || !(await pause(retryBaseMs, 'status 500'))) {
              throw new BridgeError(
                'upstream_bad_answer',
                `provider ${c.name} failed ${serverFailures === 1 ? 'with status 500, with no time left to retry' : 'twice with status 500'}${a.message ? `: ${a.message}` : ''}`,
              );
            }
            break;
          case 'unavailable': {
            unavailableRetries++;
            const wait = a.retryAfterMs ?? backoffMs(unavailableRetries - 1, retryBaseMs, retryCapMs, random);
            if (unavailableRetries > maxUnavailableRetries || !(await pause(wait, 'status 503'))) {
              const after =
                a.retryAfterMs === undefined
                  ? ''
                  : `; it asks to retry after ${Math.ceil(a.retryAfterMs / 1000)} s`;
              throw new BridgeError(
                'upstream_unavailable',
                `provider ${c.name} is unavailable (503)${a.message ? `: ${a.message}` : ''}${after}`,
              );
            }
            break;
          }
        }
      }
    } catch (err) {
      outcome = err instanceof BridgeError ? err.code : 'error';
      // The provider's refusals of a request are answers, not faults: those go at info.
      const fault = !(err instanceof BridgeError) || err.code.startsWith('upstream_');
      options.log?.[fault ? 'warn' : 'info'](
        {
          call: c.name,
          outcome,
          ms: Math.round(performance.now() - started),
          reason: (err as Error).message,
        },
        'provider call failed',
      );
      throw err;
    } finally {
      options.metrics?.upstreamSeconds.observe(
        { call: c.name, outcome },
        (performance.now() - started) / 1000,
      );
    }
  }

  function classify(c: MessagingCall, res: Exchange): Attempt {
    const { status } = res;
    let value: unknown;
    let parsed = false;
    try {
      value = JSON.parse(res.text);
      parsed = true;
    } catch {}
    const { error, code } = errorOf(value);
    const message = withoutToken(error, options.token);
    if (code !== undefined && RATE_CODES.has(code)) return { kind: 'rate', code };
    if (status === 429) return { kind: 'rate', code: 429 };
    if (code === NETWORK_ERRORS.reEngagementRequired) {
      throw new BridgeError(
        'window_closed',
        `provider ${c.name} refused (131047): the caller's 24-hour conversation window is closed; send a template message instead`,
      );
    }
    const rejected = code === undefined ? undefined : REJECTED[code];
    if (rejected !== undefined) {
      throw new BridgeError(
        'message_rejected',
        `provider ${c.name} refused (${code}): the messaging network rejected the message with code ${code} (${rejected})${message ? `: ${message}` : ''}`,
      );
    }
    if (status === 200 || (status === 207 && c.allow207) || (c.anyAnswer && status >= 200 && status < 300)) {
      if (c.anyAnswer) return { kind: 'value', status, value };
      if (!parsed)
        throw new BridgeError('upstream_bad_answer', `provider ${c.name} answered with malformed JSON`);
      if (status === 200 && isObj(value) && value.success === false) {
        throw new BridgeError(
          'upstream_bad_answer',
          `provider ${c.name} answered 200 with success false${message ? `: ${message}` : ''}`,
        );
      }
      const why = c.check(value);
      if (why !== undefined) {
        throw new BridgeError(
          'upstream_bad_answer',
          `provider ${c.name} answered with a bad ${c.shape}: ${why}`,
        );
      }
      return { kind: 'value', status, value };
    }
    const text = message ? `: ${message}` : '';
    switch (status) {
      case 500:
        return { kind: 'server', message };
      case 503:
        return { kind: 'unavailable', retryAfterMs: retryAfterMs(res.headers['retry-after']), message };
      case 402:
        throw new BridgeError(
          'payment_required',
          `provider ${c.name} refused: insufficient credits (402); top up the messaging balance${text}`,
        );
      case 400:
        throw new BridgeError('bad_request', `provider ${c.name} refused the request (400)${text}`);
      case 404:
        throw new BridgeError('not_found', `provider ${c.name} found no such resource (404)${text}`);
      case 409:
        throw new BridgeError('conflict', `provider ${c.name} refused a duplicate (409)${text}`);
      case 401:
      case 403:
        throw new BridgeError(
          'upstream_bad_answer',
          `provider ${c.name} refused the bridge's credentials (${status}): check MESSAGING_TOKEN`,
        );
      default:
        throw new BridgeError(
          'upstream_bad_answer',
          `provider ${c.name} answered an unexpected status ${status}`,
        );
    }
  }

  const templateManager = (c: MessagingCall, request: unknown) =>
    call(c, 'POST', '/chat_template_manager', request);

  const campaignResult = ({ status, value }: { status: number; value: unknown }): ChatCampaignResult => ({
    launched: status === 200,
    campaign: (value as { campaign: ChatCampaign }).campaign,
  });

  return {
    async listChatTemplates(filter = {}) {
      const query = new URLSearchParams();
      if (filter.status !== undefined) {
        if (!TEMPLATE_STATUSES.includes(filter.status)) {
          throw invalidField('status', `one of ${TEMPLATE_STATUSES.join(', ')}`, filter.status);
        }
        query.set('status', filter.status);
      }
      if (filter.category !== undefined) {
        if (!TEMPLATE_CATEGORIES.includes(filter.category)) {
          throw invalidField('category', `one of ${TEMPLATE_CATEGORIES.join(', ')}`, filter.category);
        }
        query.set('category', filter.category);
      }
      const q = query.size > 0 ? `?${query}` : '';
      const { value } = await call(LIST, 'GET', `/chat_templates${q}`);
      const v = value as { data: { templates: ChatTemplateEntry[] }; count: number };
      return { templates: v.data.templates, count: v.count };
    },
    async createChatTemplate(input) {
      const request = { action: 'create', templateData: validateChatTemplateInput(input) };
      const { value } = await templateManager(CREATE, request);
      return (value as { template: ChatTemplate }).template;
    },
    async getChatTemplateStatus(templateName) {
      const request = parseTemplateManagerRequest({ action: 'get_status', templateName });
      const { value } = await templateManager(STATUS, request);
      return (value as { template: ChatTemplateStatus }).template;
    },
    async syncChatTemplates() {
      await templateManager(SYNC, { action: 'sync' });
    },
    async deleteChatTemplate(templateName) {
      await templateManager(DELETE, parseTemplateManagerRequest({ action: 'delete', templateName }));
    },
    async sendChatMessage(request) {
      const withAccount =
        request.account_id === undefined && options.accountId !== undefined
          ? { ...request, account_id: options.accountId }
          : request;
      const { value } = await call(
        SEND,
        'POST',
        '/chat_message_sender',
        validateChatSendRequest(withAccount),
      );
      return value as ChatSendResult;
    },
    async createChatCampaign(request) {
      return campaignResult(
        await call(CAMPAIGN_CREATE, 'POST', '/chat_campaign_creator', validateChatCampaignRequest(request)),
      );
    },
    async launchChatCampaign(campaignId) {
      if (typeof campaignId !== 'string' || campaignId.trim() === '') {
        throw invalidField('campaign_id', 'the id of a saved campaign', campaignId);
      }
      return campaignResult(
        await call(CAMPAIGN_LAUNCH, 'POST', '/chat_campaign_creator', { campaign_id: campaignId }),
      );
    },
    async createRcsTemplate(template) {
      const { value } = await call(
        RCS_TEMPLATE,
        'POST',
        '/rcs_template_manager',
        validateRcsTemplate(template),
      );
      return value as RcsTemplateCreated;
    },
    async launchRcsCampaign(request) {
      const { value } = await call(
        RCS_CAMPAIGN,
        'POST',
        '/rcs_campaign_launcher',
        validateRcsCampaignRequest(request),
      );
      return value as RcsCampaignResult;
    },
    close: () => agent.close(),
  };
}

// ---------------------------------------------------------------------------------------------------
// Error bodies

/** `error` and `error_data.code` of a provider answer, where present. */
function errorOf(value: unknown): { error: string; code: number | undefined } {
  if (!isObj(value)) return { error: '', code: undefined };
  const error = typeof value.error === 'string' ? value.error : '';
  const raw = isObj(value.error_data) ? value.error_data.code : undefined;
  const code =
    typeof raw === 'number' && Number.isInteger(raw)
      ? raw
      : typeof raw === 'string' && /^[0-9]+$/.test(raw)
        ? Number(raw)
        : undefined;
  return { error, code };
}

function withoutToken(message: string, token: string | undefined): string {
  return token !== undefined && token !== '' ? message.replaceAll(token, '[redacted]') : message;
}

/** `Retry-After` in milliseconds: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(header) ? header[0] : header;
  if (v === undefined || v.trim() === '') return undefined;
  if (/^\s*[0-9]+\s*$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

// ---------------------------------------------------------------------------------------------------
// Answer shapes

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const first = (...checks: (string | undefined)[]): string | undefined => checks.find((c) => c !== undefined);
const str = (o: Obj, k: string, at = ''): string | undefined =>
  typeof o[k] === 'string' ? undefined : `"${at}${k}" is not a string`;
const int = (o: Obj, k: string, at = ''): string | undefined =>
  Number.isInteger(o[k]) ? undefined : `"${at}${k}" is not an integer`;
const bool = (o: Obj, k: string): string | undefined =>
  typeof o[k] === 'boolean' ? undefined : `"${k}" is not a boolean`;
const oneOf = (o: Obj, k: string, allowed: readonly string[], at = ''): string | undefined =>
  typeof o[k] === 'string' && allowed.includes(o[k] as string)
    ? undefined
    : `"${at}${k}" is not one of ${allowed.join(', ')}`;
/** The object under `k`, checked by `inner`. */
const nested = (o: Obj, k: string, inner: (v: Obj) => string | undefined): string | undefined => {
  const v = o[k];
  return isObj(v) ? inner(v) : `"${k}" is not an object`;
};

const checkTemplateList: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return first(
    bool(v, 'success'),
    int(v, 'count'),
    nested(v, 'data', (d) => {
      if (!Array.isArray(d.templates)) return '"data.templates" is not an array';
      for (const [i, t] of d.templates.entries()) {
        const at = `data.templates[${i}].`;
        if (!isObj(t)) return `"${at.slice(0, -1)}" is not an object`;
        const why = first(str(t, 'template_name', at), oneOf(t, 'status', TEMPLATE_STATUSES, at));
        if (why !== undefined) return why;
      }
      return undefined;
    }),
  );
};

const checkCreated: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return first(
    bool(v, 'success'),
    nested(v, 'template', (t) =>
      first(
        str(t, 'id', 'template.'),
        str(t, 'template_name', 'template.'),
        oneOf(t, 'status', TEMPLATE_STATUSES, 'template.'),
        oneOf(t, 'category', TEMPLATE_CATEGORIES, 'template.'),
        str(t, 'language', 'template.'),
        str(t, 'created_at', 'template.'),
      ),
    ),
  );
};

const checkStatus: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return first(
    bool(v, 'success'),
    nested(v, 'template', (t) =>
      first(
        str(t, 'id', 'template.'),
        str(t, 'template_name', 'template.'),
        oneOf(t, 'status', TEMPLATE_STATUSES, 'template.'),
        t.rejection_reason === null ? undefined : str(t, 'rejection_reason', 'template.'),
        str(t, 'quality_score', 'template.'),
      ),
    ),
  );
};

const checkSend: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return first(
    bool(v, 'success'),
    nested(v, 'data', (d) =>
      first(
        str(d, 'message_id', 'data.'),
        str(d, 'wa_id', 'data.'),
        oneOf(d, 'status', MESSAGE_STATUSES, 'data.'),
      ),
    ),
    nested(v, 'performance', (p) => int(p, 'total_time_ms', 'performance.')),
  );
};

const checkCampaign: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return first(
    bool(v, 'success'),
    nested(v, 'campaign', (c) =>
      first(
        str(c, 'id', 'campaign.'),
        str(c, 'campaign_name', 'campaign.'),
        str(c, 'template_name', 'campaign.'),
        str(c, 'status', 'campaign.'),
        int(c, 'total_recipients', 'campaign.'),
        str(c, 'queued_at', 'campaign.'),
      ),
    ),
  );
};

const checkRcsCreated: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return first(
    bool(v, 'success'),
    nested(v, 'template', (t) =>
      first(
        str(t, 'template_name', 'template.'),
        oneOf(t, 'template_type', RCS_TEMPLATE_TYPES, 'template.'),
        str(t, 'bot_name', 'template.'),
        str(t, 'created_at', 'template.'),
      ),
    ),
  );
};

const checkRcsCampaign: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return first(str(v, 'status'), str(v, 'campaign_id'), int(v, 'messages_queued'));
};

const ANY: ShapeCheck = () => undefined;

const LIST: MessagingCall = { name: 'chat template list', shape: 'template list', check: checkTemplateList };
const CREATE: MessagingCall = {
  name: 'chat template create',
  shape: 'created template',
  check: checkCreated,
};
const STATUS: MessagingCall = { name: 'chat template status', shape: 'template status', check: checkStatus };
const SYNC: MessagingCall = { name: 'chat template sync', shape: 'sync answer', check: ANY, anyAnswer: true };
const DELETE: MessagingCall = {
  name: 'chat template delete',
  shape: 'delete answer',
  check: ANY,
  anyAnswer: true,
};
const SEND: MessagingCall = { name: 'chat send', shape: 'send result', check: checkSend, paced: true };
const CAMPAIGN_CREATE: MessagingCall = {
  name: 'chat campaign create',
  shape: 'campaign',
  check: checkCampaign,
  allow207: true,
};
const CAMPAIGN_LAUNCH: MessagingCall = {
  name: 'chat campaign launch',
  shape: 'campaign',
  check: checkCampaign,
  allow207: true,
};
const RCS_TEMPLATE: MessagingCall = {
  name: 'rcs template create',
  shape: 'created template',
  check: checkRcsCreated,
};
const RCS_CAMPAIGN: MessagingCall = {
  name: 'rcs campaign launch',
  shape: 'campaign result',
  check: checkRcsCampaign,
};
