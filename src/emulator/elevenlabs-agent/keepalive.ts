/**
 * The ElevenLabs server's keep-alive on one conversation: `ping {ping_event:{event_id, ping_ms}}` every
 * `intervalMs`, each awaiting `{"type":"pong","event_id"}` within `timeoutMs`. A pong later than that, or
 * none, is missed; `maxMissed` missed in a row end the conversation (the caller closes with 1008). A late
 * pong still measures a round trip, and is noted. `ping_ms` carries the round trip the previous pong
 * measured (absent on the first ping). Pings and pongs are kept in the record.
 */
import type { Ping } from '@elevenlabs/types';
import type { StandInRecord } from '../s2s/record.js';

export interface KeepAliveSettings {
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly maxMissed: number;
}

export class KeepAlive {
  private pingId = 0;
  private lastRttMs: number | undefined;
  private missedInRow = 0;
  private interval: NodeJS.Timeout | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly record: StandInRecord,
    private readonly settings: KeepAliveSettings,
    private readonly send: (ping: Ping) => void,
    /** Too many pongs missed: `reason` says what was awaited. */
    private readonly onMissed: (reason: string) => void,
  ) {}

  start(): void {
    if (this.settings.intervalMs > 0)
      this.interval = setInterval(() => this.ping(), this.settings.intervalMs);
  }

  private ping(): void {
    const id = ++this.pingId;
    const rec = { id, sent_at_ms: this.record.nowMs(), answered_at_ms: null as number | null };
    this.record.pings.push(rec);
    this.send({
      type: 'ping',
      ping_event: { event_id: id, ...(this.lastRttMs !== undefined ? { ping_ms: this.lastRttMs } : {}) },
    });
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (rec.answered_at_ms !== null) return;
      this.missedInRow++;
      if (this.missedInRow >= this.settings.maxMissed)
        this.onMissed(`no pong within ${this.settings.timeoutMs} ms`);
    }, this.settings.timeoutMs);
    this.timers.add(t);
  }

  /** A client `pong` with this `event_id`. */
  pong(eventId: unknown): void {
    const rec = this.record.pings.find((p) => p.id === eventId);
    if (rec === undefined) {
      this.record.note(`pong for an event_id never pinged: ${JSON.stringify(eventId)}`);
      return;
    }
    if (rec.answered_at_ms !== null) {
      this.record.note(`a second pong for ping ${rec.id}`);
      return;
    }
    rec.answered_at_ms = this.record.nowMs();
    const rtt = rec.answered_at_ms - rec.sent_at_ms;
    this.lastRttMs = rtt;
    if (rtt > this.settings.timeoutMs)
      this.record.note(`pong for ping ${rec.id} after ${rtt} ms (bound ${this.settings.timeoutMs} ms)`);
    else this.missedInRow = 0;
  }

  stop(): void {
    if (this.interval !== undefined) clearInterval(this.interval);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
