/**
 * A test provider: one WebSocket to the bridge's media endpoint that records everything it receives,
 * with arrival times on the monotonic clock.
 */
import WebSocket from 'ws';
import { pace } from '../../src/emulator/paced-caller.js';
import { nextGap } from './platform-socket.js';
import { describeGap, type Moment, moment, stamp, stoppedMs } from './schedstat.js';
import { waitFor } from './wait.js';

/** An audio chunk as it arrived; with the main thread's CPU times then when sampled (see schedstat.ts). */
export interface AudioArrival extends Moment {
  readonly data: Buffer;
}

export interface ProviderEventMsg {
  readonly at: number;
  readonly event: string;
  readonly [key: string]: unknown;
}

export class TestProvider {
  readonly ws: WebSocket;
  readonly audio: AudioArrival[] = [];
  readonly events: ProviderEventMsg[] = [];
  /** Binary frames and events in arrival order, for ordering checks. */
  readonly order: ({ kind: 'audio'; bytes: number } | { kind: 'event'; event: string; name?: unknown })[] =
    [];
  closeCode: number | undefined;
  closeReason = '';
  readonly opened: Promise<void>;
  unexpectedResponse: number | undefined;

  constructor(
    url: string,
    options: { token?: string; header?: boolean; autoPong?: boolean; sampleRunDelay?: boolean } = {},
  ) {
    const sample = options.sampleRunDelay === true;
    const headers: Record<string, string> = {};
    let target = url;
    if (options.token !== undefined) {
      if (options.header === false) target = `${url}?token=${encodeURIComponent(options.token)}`;
      else headers.authorization = `Bearer ${options.token}`;
    }
    this.ws = new WebSocket(target, { headers, autoPong: options.autoPong ?? true });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('unexpected-response', (_req, res) => {
        this.unexpectedResponse = res.statusCode;
        reject(new Error(`upgrade refused: ${res.statusCode}`));
      });
      this.ws.once('error', reject);
    });
    this.opened.catch(() => {});
    this.ws.on('message', (data: Buffer, isBinary: boolean) => {
      const when = sample ? moment() : stamp();
      const at = when.at;
      if (isBinary) {
        this.audio.push({ ...when, data });
        this.order.push({ kind: 'audio', bytes: data.length });
      } else {
        const ev = JSON.parse(data.toString('utf8')) as { event: string };
        this.events.push({ ...ev, at });
        this.order.push({ kind: 'event', event: ev.event, name: (ev as { name?: unknown }).name });
        if (ev.event === 'media') {
          const payload = Buffer.from((ev as unknown as { payload: string }).payload, 'base64');
          this.audio.push({ ...when, data: payload });
        }
      }
    });
    this.ws.on('close', (code: number, reason: Buffer) => {
      this.closeCode = code;
      this.closeReason = reason.toString();
    });
    this.ws.on('error', () => {});
  }

  send(obj: unknown): void {
    this.ws.send(JSON.stringify(obj));
  }

  sendRaw(data: string | Buffer): void {
    this.ws.send(data);
  }

  async start(sessionId: string, extra: Record<string, unknown> = {}): Promise<void> {
    await this.opened;
    this.send({
      event: 'session_start',
      session_id: sessionId,
      customer_phone: '+15550100',
      direction: 'inbound',
      started_at: new Date().toISOString(),
      ...extra,
    });
  }

  /** Sends `pcm` in `chunkBytes` pieces at real time, on the shared paced caller's schedule. */
  sendPaced(pcm: Buffer, chunkBytes: number, chunkMs: number, encode?: 'base64'): Promise<void> {
    return pace({
      chunkMs,
      chunks: Math.ceil(pcm.length / chunkBytes),
      send: (i) => {
        const piece = pcm.subarray(i * chunkBytes, (i + 1) * chunkBytes);
        if (encode === 'base64') this.send({ event: 'media', payload: piece.toString('base64') });
        else this.ws.send(piece);
      },
    });
  }

  audioBytes(): Buffer {
    return Buffer.concat(this.audio.map((a) => a.data));
  }

  errors(): ProviderEventMsg[] {
    return this.events.filter((e) => e.event === 'error');
  }

  async waitClosed(timeoutMs = 5_000): Promise<number> {
    await waitFor(() => this.closeCode !== undefined, timeoutMs, 'provider socket to close');
    return this.closeCode!;
  }

  async waitEvent(event: string, timeoutMs = 5_000, pred: (e: ProviderEventMsg) => boolean = () => true) {
    await waitFor(() => this.events.some((e) => e.event === event && pred(e)), timeoutMs, `event ${event}`);
    return this.events.find((e) => e.event === event && pred(e))!;
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING)
      this.ws.terminate();
  }
}

/**
 * Gaps between consecutive audio arrivals: `raw`, and `own` less the time this process was stopped within
 * each gap (off the CPU while runnable, or collecting garbage; see schedstat.ts). `own` equals `raw` on a
 * quiet machine with no collection in the way.
 */
export function interArrival(audio: readonly AudioArrival[]): {
  raw: number[];
  own: number[];
  worst: string;
  /** When the largest gap (less the stalls) began and ended, on performance.now(). */
  worstAt: readonly [number, number] | undefined;
} {
  const raw: number[] = [];
  const own: number[] = [];
  let worst = 0;
  for (let i = 1; i < audio.length; i++) {
    const a = audio[i]!;
    const prev = audio[i - 1]!;
    const gap = a.at - prev.at;
    raw.push(gap);
    own.push(gap - stoppedMs(prev, a));
    if (own[i - 1]! > own[worst]!) worst = i - 1;
  }
  const where = audio.length < 2 ? 'no gaps' : describeGap(audio[worst]!, audio[worst + 1]!);
  return {
    raw,
    own,
    worst: `largest gap after chunk ${worst}: ${where}${nextGap(own, worst)}`,
    worstAt: audio.length < 2 ? undefined : [audio[worst]!.at, audio[worst + 1]!.at],
  };
}
