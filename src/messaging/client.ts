/**
 * Typed client of the provider's messaging APIs (chat and RCS), on the same
 * HTTP plumbing as the voice client (../http.ts).
 *
 * Every request is validated locally first (./validate.ts): a bad one never reaches the provider.
 * Sends are paced by slots (./rate.ts): a send holds one from its admission until a second after its
 * answer, at most the sender's 80 at once, so the provider never sees more than 80 arrive in a rolling
 * second. The whole call, its waits for a send slot and its retries included, is bounded by
 * `readTimeoutMs`, and every attempt is left `minAttemptMs` of it at least: a send is not admitted, and
 * a retry not paused for, when less would remain (the request would be aborted as it went out, its
 * outcome unknown). A send that gets no answer in time keeps its slot a further second: the request
 * may still reach the provider. `close()` ends the waits for slots and the pauses between attempts.
 *
 * Failure mapping, each message naming the provider call that failed:
 * - network code 130429 (in `error_data.code`, whatever the status), or HTTP 429 -> retried with
 *   full-jitter backoff up to `maxRateRetries` times, then 429 too_many_requests
 * - network code 133000 -> retried once after a backoff, then 429 too_many_requests naming both of its
 *   meanings (more than 80 per second on a send; the account's 24-hour tier limit reached)
 * - 500 -> retried once for calls a repeat cannot duplicate (template list, status and sync, chat
 *   template and campaign creates, refused as a duplicate name when repeated), then 502
 *   upstream_bad_answer; any other call (the chat send, the campaign launches, a delete, an RCS template
 *   create) is not retried: 502 at once, saying it may or may not have taken effect
 * - 503 -> retried after `Retry-After` or a jittered backoff while the bound allows, then
 *   503 upstream_unavailable
 * - 131047 -> 409 window_closed; 131026, 131053, 100 -> 422 message_rejected
 * - 402 -> payment_required; 400 -> bad_request, 404 -> not_found, 409 -> conflict, with the provider's
 *   `error` text; 401/403 -> 502 upstream_bad_answer (the bridge's credentials were refused)
 * - no answer in time -> 504 upstream_timeout; unreachable -> 503 upstream_unavailable
 * - malformed JSON, a wrong shape, an unexpected status -> 502 upstream_bad_answer
 *
 * Failures are logged with the call, the outcome, the HTTP status and the network code only: the
 * provider's `error` text may quote phone numbers.
 */
import { setMaxListeners } from 'node:events';
import { BridgeError, invalidField } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { type CallTrace, createAgent, type Exchange, exchange, observeCall } from '../provider/http.js';
import { isObj } from '../provider/json.js';
import {
  CAMPAIGN_CREATE,
  CAMPAIGN_LAUNCH,
  CREATE,
  DELETE,
  LIST,
  MEDIA_SEND,
  type MessagingCall,
  RCS_CAMPAIGN,
  RCS_TEMPLATE,
  SEND,
  STATUS,
  SYNC,
} from './calls.js';
import { backoffMs, delay, SendSlots, type Slot } from './rate.js';
import {
  type ChatCampaign,
  type ChatCampaignResult,
  type ChatSendResult,
  type ChatTemplate,
  type ChatTemplateEntry,
  type ChatTemplateStatus,
  type MessagingClient,
  NETWORK_ERRORS,
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
  /**
   * `chat_message_sender` slots (80, the documented limit per second): a send holds one from its
   * admission until a second after its answer, so no rolling second at the provider holds more than
   * this many of this process's sends. The slots are this process's own: bridge instances sharing one
   * account must divide the provider's 80 between them (MESSAGING_SENDS_PER_SEC per instance), or they
   * will see 130429 together.
   */
  readonly sendsPerSecond?: number;
  /**
   * Time left to each attempt at least (MIN_ATTEMPT_MS, at most half of `readTimeoutMs`): a send is
   * not admitted to its slot, nor a retry paused for, when less of the bound would remain after.
   */
  readonly minAttemptMs?: number;
  /** Retries of a rate-limited call (130429, 429) before too_many_requests (5); 133000 is retried once. */
  readonly maxRateRetries?: number;
  /** Retries of a provider 503 before upstream_unavailable (2). */
  readonly maxUnavailableRetries?: number;
  /** First backoff ceiling, doubled per retry (250 ms); also the pause before the one retry of a 500. */
  readonly retryBaseMs?: number;
  /** Largest backoff ceiling (8 s). */
  readonly retryCapMs?: number;
  /**
   * Called with each paced send's admission time (`performance.now()` clock) as it is given its slot
   * (each retry takes a new one); the send goes out at once or, when the event loop is busy, a little
   * after.
   */
  readonly onSendAdmitted?: (atMs: number) => void;
  /** Uniform in [0, 1): the jitter source, injectable for tests. */
  readonly random?: () => number;
  readonly metrics?: Metrics;
  /**
   * Failed and retried calls are logged here: call, outcome, HTTP status, network code and duration;
   * never bodies, tokens or the provider's text.
   */
  readonly log?: Logger;
}

/**
 * Time left to each attempt at least. A request sent with a few milliseconds left is aborted as it
 * goes out: it may still reach the provider and take effect while the caller is told 504, and a send's
 * slot would free while the request is still on its way. Two seconds covers a connection and an answer
 * to a send (a few hundred milliseconds) with room to spare.
 */
export const MIN_ATTEMPT_MS = 2_000;

/** chat.md's sender limit, which 133000 names on a send. */
const PROVIDER_SENDS_PER_SECOND = 80;

const REJECTED: Readonly<Record<number, string>> = {
  [NETWORK_ERRORS.undeliverable]: 'message undeliverable: number unreachable or blocked',
  [NETWORK_ERRORS.mediaTypeMismatch]: 'media type mismatch: the MIME type does not match the file extension',
  [NETWORK_ERRORS.invalidParameter]: 'invalid parameter: check the template structure and parameters',
};

/** One attempt's outcome that the loop acts on; everything else is thrown where it is found. */
type Attempt =
  | { kind: 'value'; status: number; value: unknown }
  | { kind: 'rate'; code: number }
  | { kind: 'tier' }
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
  // Half the bound at most: a short bound still leaves its first attempt room to wait for a slot.
  const minAttemptMs = Math.min(options.minAttemptMs ?? MIN_ATTEMPT_MS, options.readTimeoutMs / 2);
  const slots = new SendSlots({ limit: perSecond, windowMs: 1_000 });
  const agent = createAgent(options);
  /** Aborted by `close()`: ends the pauses between attempts and the waits for send slots. */
  const closing = new AbortController();
  // Every waiting send and every pause listens for the close: any number of them at once, by design.
  setMaxListeners(0, closing.signal);
  let closed: Promise<void> | undefined;

  function call(
    c: MessagingCall,
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<{ status: number; value: unknown }> {
    return observeCall(options, c.name, (trace) => attempts(c, method, path, body, trace));
  }

  async function attempts(
    c: MessagingCall,
    method: 'GET' | 'POST',
    path: string,
    body: unknown,
    trace: CallTrace,
  ): Promise<{ status: number; value: unknown }> {
    const deadline = performance.now() + options.readTimeoutMs;
    let rateRetries = 0;
    let tierRetries = 0;
    let unavailableRetries = 0;
    let serverFailures = 0;
    /**
     * Waits `ms` before the next attempt if the bound leaves the attempt `minAttemptMs` after it; false
     * when it does not. Rejects with the client's closed error when the client is closed meanwhile.
     */
    const pause = async (ms: number, why: string): Promise<boolean> => {
      if (!(performance.now() + ms + minAttemptMs < deadline)) return false;
      options.log?.info({ call: c.name, why, waitMs: Math.round(ms) }, 'provider call retried');
      await delay(ms, closing.signal);
      return true;
    };
    for (;;) {
      let slot: Slot | undefined;
      if (c.paced) {
        slot = await slots.acquire(deadline - performance.now() - minAttemptMs, closing.signal);
        if (slot === undefined) {
          throw new BridgeError(
            'too_many_requests',
            `provider ${c.name} not sent: sends are paced at ${perSecond} per second and this one's slot would come with less than ${Math.round(minAttemptMs)} ms of the ${options.readTimeoutMs} ms bound left`,
          );
        }
      }
      let res: Exchange;
      let unanswered = false;
      try {
        if (slot !== undefined) options.onSendAdmitted?.(slot.admittedAt);
        res = await exchange(agent, c.name, options, {
          method,
          url: `${base}${path}`,
          token: options.token,
          body,
          deadline,
        });
      } catch (err) {
        unanswered = err instanceof BridgeError && err.code === 'upstream_timeout';
        throw err;
      } finally {
        // The answer (or the failure) is in: the slot frees a second from now. A request given up at
        // the deadline may still be on its way and arrive later: its slot is held a further window.
        slot?.release(unanswered ? slots.windowMs : 0);
      }
      const a = classify(c, res, trace);
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
        case 'tier': {
          // 133000 is either a burst (which one retry after a backoff gets past) or the account's tier
          // limit for the day (which no retry will): one retry only, then both meanings are named.
          tierRetries++;
          const wait = backoffMs(tierRetries - 1, retryBaseMs, retryCapMs, random);
          if (tierRetries > 1 || !(await pause(wait, `rate limit ${NETWORK_ERRORS.rateLimitExceeded}`))) {
            throw new BridgeError(
              'too_many_requests',
              `provider ${c.name} refused with ${NETWORK_ERRORS.rateLimitExceeded}: more than ${PROVIDER_SENDS_PER_SECOND} messages per second, or the account's messaging tier limit for 24 hours is reached`,
            );
          }
          break;
        }
        case 'server':
          serverFailures++;
          if (!c.idempotent) {
            throw new BridgeError(
              'upstream_bad_answer',
              `provider ${c.name} failed (500): ${c.uncertain ?? 'it may or may not have taken effect'}; not retried${a.message ? `: ${a.message}` : ''}`,
            );
          }
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
  }

  function classify(c: MessagingCall, res: Exchange, trace: CallTrace): Attempt {
    const { status } = res;
    let value: unknown;
    let parsed = false;
    try {
      value = JSON.parse(res.text);
      parsed = true;
    } catch {}
    const { error, code } = errorOf(value);
    trace.status = status;
    trace.networkCode = code;
    const message = withoutToken(error, options.token);
    if (code === NETWORK_ERRORS.rateLimitExceeded) return { kind: 'tier' };
    if (code === NETWORK_ERRORS.rateLimitHit) return { kind: 'rate', code };
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
    if (
      status === 200 ||
      (status === 207 && c.allow207 !== undefined) ||
      (c.anyAnswer && status >= 200 && status < 300)
    ) {
      if (c.anyAnswer) return { kind: 'value', status, value };
      if (!parsed)
        throw new BridgeError('upstream_bad_answer', `provider ${c.name} answered with malformed JSON`);
      if (status === 200 && isObj(value) && value.success === false) {
        throw new BridgeError(
          'upstream_bad_answer',
          `provider ${c.name} answered 200 with success false${message ? `: ${message}` : ''}`,
        );
      }
      const why = (status === 207 && c.allow207 !== undefined ? c.allow207 : c.check)(value);
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
        withAccount.message.type === 'text' ? SEND : MEDIA_SEND,
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
    async createRcsTemplate(template): Promise<RcsTemplateCreated> {
      const t = validateRcsTemplate(template);
      // rcs.md: a 200 means created; the body is not shown, so nothing in it is read.
      await call(RCS_TEMPLATE, 'POST', '/rcs_template_manager', t);
      return {
        template: { template_name: t.template_name, template_type: t.template_type, bot_name: t.bot_name },
      };
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
    close() {
      closed ??= (async () => {
        const reason = new BridgeError('upstream_unavailable', 'the messaging client is closed');
        closing.abort(reason);
        slots.close(reason);
        await agent.close();
      })();
      return closed;
    },
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
