/**
 * A telephony platform's side of a JSON media stream, for the provider-dialect tests: one WebSocket to
 * the bridge with the platform's upgrade headers, every text frame kept with when it arrived and this
 * process's off-CPU time so far (schedstat: a pacing check subtracts what the receiver lost), and the
 * refusal status or close code. Each test's own class adds the platform's frames on top.
 */
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { type Moment, runDelayMs, stoppedMs } from './schedstat.js';

export interface Arrival {
  readonly at: number;
  readonly runDelay: number | undefined;
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
  readonly binary: { at: number; runDelay: number | undefined; bytes: Buffer }[] = [];

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
      if (isBinary) this.binary.push({ at: performance.now(), runDelay: runDelayMs(), bytes: d });
      else this.got.push({ at: performance.now(), runDelay: runDelayMs(), msg: parseText(d.toString()) });
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

/** Gaps between arrivals, less the time this process was stopped within each (ms; see schedstat.ts). */
export function ownGaps(arrivals: readonly Moment[]): number[] {
  return arrivals.slice(1).map((g, i) => g.at - arrivals[i]!.at - stoppedMs(arrivals[i]!, g));
}
