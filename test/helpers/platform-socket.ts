/**
 * A telephony platform's side of a JSON media stream, for the provider-dialect tests: one WebSocket to
 * the bridge with the platform's upgrade headers, every text frame kept with when it arrived and this
 * process's off-CPU time so far (schedstat: a pacing check subtracts what the receiver lost, never the
 * bridge's own pauses: it judges a bridge in another process), and the refusal status or close code.
 * Each test's own class adds the platform's frames on top.
 */
import { expect } from 'vitest';
import WebSocket from 'ws';
import type { BridgeWatch } from './bridge-process.js';
import { describeGap, expectBridgeElsewhere, type Moment, moment, stoppedMs } from './schedstat.js';

export interface Arrival extends Moment {
  readonly msg: Record<string, unknown>;
}

export class PlatformSocket {
  readonly ws: WebSocket;
  readonly got: Arrival[] = [];
  /** The HTTP status of a refused upgrade. */
  status: number | undefined;
  closeCode: number | undefined;
  /** Resolves when the upgrade is accepted; rejects when it is refused. */
  readonly opened: Promise<void>;

  /** Binary frames, with arrival time and off-CPU time as for text ones. */
  readonly binary: (Moment & { bytes: Buffer })[] = [];

  constructor(
    url: string,
    headers: Record<string, string>,
    track: PlatformSocket[],
    /** The subprotocols the upgrade offers (jambonz's `audio.jambonz.org`). */
    protocols: string[] = [],
  ) {
    this.ws = new WebSocket(url, protocols, { headers });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('unexpected-response', (_req, res) => {
        this.status = res.statusCode;
        reject(new Error(`refused ${res.statusCode}`));
      });
      this.ws.once('error', reject);
    });
    this.opened.catch(() => {});
    this.ws.on('message', (d: Buffer, isBinary: boolean) => {
      if (isBinary) this.binary.push({ ...moment(), bytes: d });
      else this.got.push({ ...moment(), msg: parseText(d.toString()) });
    });
    this.ws.on('close', (code) => {
      this.closeCode = code;
    });
    track.push(this);
  }

  /** The frames of one event, in arrival order. */
  of(event: string): Arrival[] {
    return this.got.filter((g) => g.msg.event === event);
  }
}

/** A JSON text frame as its object; a plain-text one (Asterisk's `MARK_MEDIA x`) as `{ text }`. */
function parseText(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {}
  return { text };
}

/**
 * Gaps between arrivals, less the time this (receiving) process was stopped within each (ms; see
 * schedstat.ts): nothing is subtracted over arrivals stamped while a bridge ran in this process.
 */
export function ownGaps(arrivals: readonly Moment[]): number[] {
  return arrivals.slice(1).map((g, i) => g.at - arrivals[i]!.at - stoppedMs(arrivals[i]!, g));
}

/** A burst of paced chunks as the pacing checks judge it. */
export interface BurstPacing {
  /** From the first chunk's arrival to the end of the last one's playout (ms). */
  readonly span: number;
  /**
   * The inter-arrival p99 (nearest rank), less the time the receiving process was stopped (ms). Over 99
   * gaps or fewer that is the largest gap, not a p99: the burst checks send 4 s (199 gaps), so one late
   * gap is allowed, as the audio-path check's 149 gaps already allowed, and two are not.
   */
  readonly p99: number;
  /** The inter-arrival median and largest gap, on the same terms (ms), for the log. */
  readonly p50: number;
  readonly max: number;
  /** Where the largest gap falls and where its time went (see describeGap), for the log. */
  readonly worst: string;
}

/**
 * Judges a burst received from a bridge in another process (throws otherwise: see expectBridgeElsewhere);
 * with the bridge's `watch`, `worst` also says what the bridge itself went through.
 */
export function burstPacing(burst: readonly Moment[], chunkMs = 20, watch?: BridgeWatch): BurstPacing {
  expectBridgeElsewhere(burst);
  const own = ownGaps(burst);
  const sorted = [...own].sort((a, b) => a - b);
  const i = own.indexOf(sorted.at(-1)!);
  return {
    span: burst.at(-1)!.at - burst[0]!.at + chunkMs,
    p99: sorted[Math.ceil(sorted.length * 0.99) - 1]!,
    p50: sorted[Math.ceil(sorted.length * 0.5) - 1]!,
    max: sorted.at(-1)!,
    worst: `largest gap after chunk ${i}: ${describeGap(burst[i]!, burst[i + 1]!)}${nextGap(own, i)}${
      watch === undefined
        ? ''
        : `; ${watch.describe(burst[0]!.at, burst.at(-1)!.at, [burst[i]!.at, burst[i + 1]!.at])}`
    }`,
  };
}

/** The gap after the largest: a short one says the pacer caught up (it was late), not that it drifted. */
export function nextGap(gaps: readonly number[], i: number): string {
  const next = gaps[i + 1];
  return next === undefined ? '' : `; the next gap ${next.toFixed(1)} ms`;
}

/**
 * A 4 s burst of 20 ms chunks checked as paced at real time: spread over more than 3.9 s, inter-arrival
 * p99 within 25 ms. Its figures are printed first, so a failing run shows them.
 */
export function expectPacedBurst(label: string, burst: readonly Moment[], watch?: BridgeWatch): void {
  const { span, p50, p99, max, worst } = burstPacing(burst, 20, watch);
  console.log(
    `${label}: 4 s burst paced over ${span.toFixed(0)} ms, inter-arrival p50 ${p50.toFixed(1)} p99 ${p99.toFixed(1)} max ${max.toFixed(1)} ms; ${worst}`,
  );
  expect(burst).toHaveLength(200);
  expect(span).toBeGreaterThan(3900);
  expect(p99).toBeLessThanOrEqual(25);
}
