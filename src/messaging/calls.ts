/**
 * The calls of the messaging APIs (chat.md, rcs.md) as the client makes them: each one's name in errors
 * and metrics, the check of its answer (the client trusts nothing the provider sends until it has passed
 * one), and whether a 500 may be retried without sending anything twice.
 */
import { bool, first, int, isObj, nested, type Obj, oneOf, str } from '../provider/json.js';
import type { ShapeCheck } from '../provider/types.js';
import { MESSAGE_STATUSES, TEMPLATE_CATEGORIES, TEMPLATE_STATUSES } from './types.js';
/** chat.md: `success`, `data.templates` (an array), `count`. "Fields of each entry: not shown": any. */
export const checkTemplateList: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return first(
    bool(v, 'success'),
    int(v, 'count'),
    nested(v, 'data', (d) => (Array.isArray(d.templates) ? undefined : '"data.templates" is not an array')),
  );
};

/** A template manager answer: `success` and a `template` with its id, name and status, and `more`. */
const templateAnswer =
  (more: (t: Obj, at: string) => (string | undefined)[]): ShapeCheck =>
  (v) => {
    if (!isObj(v)) return 'it is not a JSON object';
    const at = 'template.';
    return first(
      bool(v, 'success'),
      nested(v, 'template', (t) =>
        first(
          str(t, 'id', at),
          str(t, 'template_name', at),
          oneOf(t, 'status', TEMPLATE_STATUSES, at),
          ...more(t, at),
        ),
      ),
    );
  };

export const checkCreated = templateAnswer((t, at) => [
  oneOf(t, 'category', TEMPLATE_CATEGORIES, at),
  str(t, 'language', at),
  str(t, 'created_at', at),
]);

export const checkStatus = templateAnswer((t, at) => [
  t.rejection_reason === null ? undefined : str(t, 'rejection_reason', at),
  str(t, 'quality_score', at),
]);

/** A text send's answer, as chat.md shows it. */
export const checkSend: ShapeCheck = (v) => {
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

/**
 * An image, document or interactive send's answer: "Response shape ...: not shown". Only the message
 * id, which the send's record needs, is required (as a text send's answer carries it); anything else
 * may be there or not.
 */
export const checkMediaSend: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return nested(v, 'data', (d) => str(d, 'message_id', 'data.'));
};

/** A launched campaign (200), as chat.md shows it. */
export const checkCampaign: ShapeCheck = (v) => {
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

/**
 * A campaign saved with its launch failed (207): chat.md says to "use campaign.id to retry the launch"
 * and shows nothing else of the answer, so only that id is required.
 */
export const checkSavedCampaign: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return nested(v, 'campaign', (c) => str(c, 'id', 'campaign.'));
};

export const checkRcsCampaign: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return first(str(v, 'status'), str(v, 'campaign_id'), int(v, 'messages_queued'));
};

export const ANY: ShapeCheck = () => undefined;

export interface MessagingCall {
  readonly name: string;
  readonly shape: string;
  readonly check: ShapeCheck;
  /** The answer's shape is not documented: any 2xx, even empty, is success. */
  readonly anyAnswer?: boolean;
  /** 207 is an answer (the campaign creator's "saved, launch failed"), checked by this. */
  readonly allow207?: ShapeCheck;
  /** Paced by the send slots. */
  readonly paced?: boolean;
  /**
   * A repeat cannot send or create anything twice (a read, or a create the provider refuses as a
   * duplicate name), so a 500 is retried once. Without it a 500 is final: the first attempt may have
   * taken effect, and a second could send the message again.
   */
  readonly idempotent?: boolean;
  /** What may have happened when a call that is not idempotent fails with a 500. */
  readonly uncertain?: string;
}

export const LIST: MessagingCall = {
  name: 'chat template list',
  shape: 'template list',
  check: checkTemplateList,
  idempotent: true,
};
/** Repeated, a create that took effect is refused as "Template already exists" (409): nothing twice. */
export const CREATE: MessagingCall = {
  name: 'chat template create',
  shape: 'created template',
  check: checkCreated,
  idempotent: true,
};
export const STATUS: MessagingCall = {
  name: 'chat template status',
  shape: 'template status',
  check: checkStatus,
  idempotent: true,
};
export const SYNC: MessagingCall = {
  name: 'chat template sync',
  shape: 'sync answer',
  check: ANY,
  anyAnswer: true,
  idempotent: true,
};
/** Not retried: a repeat of a delete that took effect answers 404, hiding that it did. */
export const DELETE: MessagingCall = {
  name: 'chat template delete',
  shape: 'delete answer',
  check: ANY,
  anyAnswer: true,
  uncertain: 'the template may or may not have been deleted',
};
export const SEND: MessagingCall = {
  name: 'chat send',
  shape: 'send result',
  check: checkSend,
  paced: true,
  uncertain: 'the message may or may not have been sent',
};
/** An image, document or interactive send: its answer's shape is not shown beyond the message id. */
export const MEDIA_SEND: MessagingCall = { ...SEND, check: checkMediaSend };
/** Repeated, a create that took effect is refused as a duplicate campaign_name (409): sent once. */
export const CAMPAIGN_CREATE: MessagingCall = {
  name: 'chat campaign create',
  shape: 'campaign',
  check: checkCampaign,
  allow207: checkSavedCampaign,
  idempotent: true,
};
export const CAMPAIGN_LAUNCH: MessagingCall = {
  name: 'chat campaign launch',
  shape: 'campaign',
  check: checkCampaign,
  allow207: checkSavedCampaign,
  uncertain: 'the campaign may or may not have been launched',
};
/** rcs.md: "Response 200 means the template was created"; its body is not shown: any 2xx is success. */
export const RCS_TEMPLATE: MessagingCall = {
  name: 'rcs template create',
  shape: 'created template',
  check: ANY,
  anyAnswer: true,
  uncertain: 'the template may or may not have been created',
};
export const RCS_CAMPAIGN: MessagingCall = {
  name: 'rcs campaign launch',
  shape: 'campaign result',
  check: checkRcsCampaign,
  uncertain: 'the campaign may or may not have been queued, and its messages sent',
};
