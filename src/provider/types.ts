/**
 * The provider's voice REST API as types, and shape checks for what it
 * answers. The bridge trusts nothing the provider sends until it has passed one of these checks.
 */
import { first, isObj, oneOf, str } from './json.js';

export const CALL_STATUSES = ['answered', 'failed', 'timeout'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

export const DIAL_STATUSES = ['ANSWER', 'NOANSWER', 'BUSY', 'CONGESTION', 'CHANUNAVAIL'] as const;
export type DialStatus = (typeof DIAL_STATUSES)[number];

export interface ConsultRequest {
  readonly calledParty: string;
  readonly callerId?: string;
}

export interface ConsultResult {
  readonly sessionId: string;
  /** `consult-<sessionId>` */
  readonly consultId: string;
  readonly status: CallStatus;
  readonly dialStatus: DialStatus;
  /** Q.850 cause; only when `status` is `failed`. */
  readonly cause?: number;
  readonly causeText?: string;
}

export type ConferenceAction = 'add' | 'delete';

export interface ConferenceRequest {
  readonly action: ConferenceAction;
  readonly number: string;
  /** Add only. */
  readonly callerId?: string;
}

export interface ConferenceResult {
  readonly sessionId: string;
  readonly number: string;
  /** `conf-<sessionId>-<number>` */
  readonly channelId: string;
  readonly status: CallStatus;
  readonly dialStatus?: DialStatus;
}

/** What the provider accepts on PUT /media-stream (field names are the provider's). */
export interface MediaStreamUpsert {
  readonly media_ws_url: string;
  readonly codec?: string;
  readonly input_sample_rate?: number;
  readonly output_sample_rate?: number;
  readonly encoding?: string;
  readonly chunk_bytes?: number;
  /** Write-only. */
  readonly media_secret?: string;
}

export interface ProviderMediaStreamConfig {
  readonly tenant: string;
  readonly media_ws_url: string;
  readonly codec: string;
  readonly input_sample_rate: number;
  readonly output_sample_rate: number;
  readonly channels: number;
  readonly encoding: string;
  readonly chunk_bytes: number;
  readonly secret_hint?: string;
}

export interface ProviderSession {
  readonly session_id: string;
  readonly customer_phone: string;
  readonly direction: 'inbound' | 'outbound';
  readonly started_at: string;
  readonly conferenceNumbers: readonly string[];
}

/** Why a provider answer is not of the expected shape; undefined when it is. */
export type ShapeCheck = (value: unknown) => string | undefined;

/** One provider call: its name in error messages and metrics, and the check of its answer. */
export interface CheckedCall {
  readonly name: string;
  readonly shape: string;
  readonly check: ShapeCheck;
}

export const checkConsultResult: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return first(
    str(v, 'sessionId'),
    str(v, 'consultId'),
    oneOf(v, 'status', CALL_STATUSES),
    oneOf(v, 'dialStatus', DIAL_STATUSES),
    v.cause === undefined || Number.isInteger(v.cause) ? undefined : '"cause" is not an integer',
    v.causeText === undefined ? undefined : str(v, 'causeText'),
  );
};

export const checkConferenceResult: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return first(
    str(v, 'sessionId'),
    str(v, 'number'),
    str(v, 'channelId'),
    oneOf(v, 'status', CALL_STATUSES),
    v.dialStatus === undefined ? undefined : oneOf(v, 'dialStatus', DIAL_STATUSES),
  );
};

export const checkMediaStreamConfig: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  if ('media_secret' in v) return 'it carries "media_secret", which must never be returned';
  return first(
    str(v, 'media_ws_url'),
    v.input_sample_rate === undefined || Number.isInteger(v.input_sample_rate)
      ? undefined
      : '"input_sample_rate" is not an integer',
  );
};

export const checkSession: ShapeCheck = (v) => {
  if (!isObj(v)) return 'it is not a JSON object';
  return first(
    str(v, 'session_id'),
    v.conferenceNumbers === undefined ||
      (Array.isArray(v.conferenceNumbers) && v.conferenceNumbers.every((n) => typeof n === 'string'))
      ? undefined
      : '"conferenceNumbers" is not an array of strings',
  );
};

export const checkSessionList: ShapeCheck = (v) => {
  if (!Array.isArray(v)) return 'it is not a JSON array';
  for (const s of v) {
    const why = checkSession(s);
    if (why !== undefined) return `an element: ${why}`;
  }
  return undefined;
};
