/**
 * The emulator's dial plan: how a dialled number behaves. A JSON object mapping a bare number to
 * `{ "dialStatus": "ANSWER"|"NOANSWER"|"BUSY"|"CONGESTION"|"CHANUNAVAIL", "afterMs": N, "cause": Q850? }`.
 * Numbers not in the plan answer after 1 s.
 */
import { readFileSync } from 'node:fs';
import { type CallStatus, DIAL_STATUSES, type DialStatus } from '../provider/types.js';

export interface DialRule {
  readonly dialStatus: DialStatus;
  /** When the outcome is known, from the start of the dial. Honoured as given, even beyond 25 s. */
  readonly afterMs?: number;
  /** Q.850 cause to report for a failed dial, instead of the usual one for `dialStatus`. */
  readonly cause?: number;
}

export type DialPlan = ReadonlyMap<string, DialRule>;

/** ITU-T Q.850 cause values the emulator reports. */
export const Q850: Readonly<Record<number, string>> = {
  1: 'Unallocated (unassigned) number',
  3: 'No route to destination',
  16: 'Normal call clearing',
  17: 'User busy',
  18: 'No user responding',
  19: 'No answer from user (user alerted)',
  20: 'Subscriber absent',
  21: 'Call rejected',
  27: 'Destination out of order',
  28: 'Invalid number format (address incomplete)',
  34: 'No circuit/channel available',
  38: 'Network out of order',
  41: 'Temporary failure',
  42: 'Switching equipment congestion',
};

/** The cause each failing dial status reports unless the plan names another. */
const DEFAULT_CAUSE: Partial<Record<DialStatus, number>> = { BUSY: 17, CONGESTION: 34, CHANUNAVAIL: 20 };

export interface DialOutcome {
  readonly afterMs: number;
  readonly status: CallStatus;
  readonly dialStatus: DialStatus;
  readonly cause?: number;
  readonly causeText?: string;
}

/** Default ring time of a number the plan does not list, and of an ANSWER rule without `afterMs`. */
export const UNKNOWN_NUMBER_ANSWER_MS = 1_000;

/** What dialling `number` does; NOANSWER rings for the dial timeout unless the rule says otherwise. */
export function dialOutcome(plan: DialPlan, number: string, dialTimeoutMs: number): DialOutcome {
  const rule = plan.get(number) ?? { dialStatus: 'ANSWER' as const };
  switch (rule.dialStatus) {
    case 'ANSWER':
      return { afterMs: rule.afterMs ?? UNKNOWN_NUMBER_ANSWER_MS, status: 'answered', dialStatus: 'ANSWER' };
    case 'NOANSWER':
      return { afterMs: rule.afterMs ?? dialTimeoutMs, status: 'timeout', dialStatus: 'NOANSWER' };
    default: {
      const cause = rule.cause ?? DEFAULT_CAUSE[rule.dialStatus] ?? 41;
      return {
        afterMs: rule.afterMs ?? 500,
        status: 'failed',
        dialStatus: rule.dialStatus,
        cause,
        causeText: Q850[cause] ?? `Q.850 cause ${cause}`,
      };
    }
  }
}

/** Parses a dial plan; throws one error listing every bad entry. */
export function parseDialPlan(json: unknown): DialPlan {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new Error('dial plan must be a JSON object mapping numbers to { dialStatus, afterMs }');
  }
  const plan = new Map<string, DialRule>();
  const problems: string[] = [];
  for (const [number, v] of Object.entries(json as Record<string, unknown>)) {
    const r = v as { dialStatus?: unknown; afterMs?: unknown; cause?: unknown } | null;
    if (typeof r !== 'object' || r === null) {
      problems.push(`${number}: must be an object { dialStatus, afterMs }`);
      continue;
    }
    if (!DIAL_STATUSES.includes(r.dialStatus as DialStatus)) {
      problems.push(
        `${number}: dialStatus must be one of ${DIAL_STATUSES.join(', ')}, got ${JSON.stringify(r.dialStatus)}`,
      );
      continue;
    }
    if (r.afterMs !== undefined && !(Number.isInteger(r.afterMs) && (r.afterMs as number) >= 0)) {
      problems.push(
        `${number}: afterMs must be a whole number of milliseconds, got ${JSON.stringify(r.afterMs)}`,
      );
      continue;
    }
    if (
      r.cause !== undefined &&
      !(Number.isInteger(r.cause) && (r.cause as number) > 0 && (r.cause as number) < 128)
    ) {
      problems.push(`${number}: cause must be a Q.850 cause from 1 to 127, got ${JSON.stringify(r.cause)}`);
      continue;
    }
    plan.set(number, {
      dialStatus: r.dialStatus as DialStatus,
      ...(r.afterMs !== undefined ? { afterMs: r.afterMs as number } : {}),
      ...(r.cause !== undefined ? { cause: r.cause as number } : {}),
    });
  }
  if (problems.length > 0) throw new Error(`bad dial plan:\n${problems.join('\n')}`);
  return plan;
}

export function loadDialPlan(path: string): DialPlan {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read dial plan ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return parseDialPlan(json);
}
