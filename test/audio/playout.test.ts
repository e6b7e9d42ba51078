/**
 * The playout core on a hand-driven clock: the caller's playback as it reckons it, and the mark rule
 * (src/audio/playout.ts). The caller here plays what arrives first in, first out, at real time; a mark
 * must come back no earlier than the caller has played the audio before it, and at most 250 ms after.
 */
import { describe, expect, it } from 'vitest';
import { MARK_FALLBACK_MS, MARK_GRACE_MS, Playout, type PlayoutOut } from '../../src/audio/playout.js';

/** µ-law 8 kHz: 160-byte, 20 ms chunks; 8 bytes a millisecond. */
const CHUNK = 160;
const BYTES_PER_MS = 8;

interface Sent {
  readonly at: number;
  readonly bytes: number;
  /** Stream position of its end. */
  readonly end: number;
}

/** A writer that records what the core hands it, and the caller's playback of it. */
class Recorder implements PlayoutOut<string> {
  now = 0;
  readonly sent: Sent[] = [];
  readonly frames: { at: number; frame: string }[] = [];
  readonly reports: { at: number; name: string; cleared: boolean }[] = [];
  readonly cuts: boolean[] = [];
  /** Chunks (by their number, from 0) the socket is too backed up to take: they are shed. */
  readonly shed = new Set<number>();
  #count = 0;
  #end = 0;

  chunk(view: Uint8Array): boolean {
    this.#end += view.length;
    if (this.shed.has(this.#count++)) return false;
    this.sent.push({ at: this.now, bytes: view.length, end: this.#end });
    return true;
  }
  passed(frame: string): void {
    this.frames.push({ at: this.now, frame });
  }
  played(name: string, cleared: boolean): void {
    this.reports.push({ at: this.now, name, cleared });
  }
  overflow(): void {}
  cut(held: boolean): void {
    this.cuts.push(held);
  }

  /**
   * When a caller playing what arrived, in order and at real time, has played up to stream position
   * `pos` (chunks arrive as they are sent: a loopback caller).
   */
  playedAt(pos: number): number {
    let end = Number.NEGATIVE_INFINITY;
    for (const s of this.sent) {
      const start = Math.max(end, s.at);
      end = start + s.bytes / BYTES_PER_MS;
      if (s.end >= pos) return start + (pos - (s.end - s.bytes)) / BYTES_PER_MS;
    }
    throw new Error(`position ${pos} never sent`);
  }

  report(name: string) {
    return this.reports.find((r) => r.name === name);
  }
}

/** A core and the loop that drives it: `at(t)` services every due time up to `t`, then sets the time. */
function rig(o: { leadMs?: number; live?: boolean } = {}) {
  const out = new Recorder();
  const core = new Playout<string>(out, {
    chunkBytes: CHUNK,
    chunkMs: 20,
    silenceByte: 0xff,
    leadMs: o.leadMs ?? 40,
    catchUpMs: 1000,
    bufferMs: 60_000,
    live: o.live,
  });
  let due = Number.POSITIVE_INFINITY;
  const wake = (next: number) => {
    if (next < due) due = next;
  };
  const at = (t: number) => {
    while (due <= t) {
      out.now = Math.max(out.now, due);
      due = Number.POSITIVE_INFINITY;
      wake(core.service(out.now));
    }
    out.now = t;
  };
  return {
    core,
    out,
    at,
    push: (bytes: number) => wake(core.push(Buffer.alloc(bytes, 0x55), out.now)),
    mark: (name: string) => wake(core.mark(name, `mark:${name}`, out.now)),
    wake,
    report: (name: string, cleared = false) => core.reported(name, cleared),
  };
}

describe('the mark rule', () => {
  it('a caller that never reports: 1 s of audio, m1, 0.5 s, m2; each mark once its audio played, within 250 ms', () => {
    const r = rig();
    r.push(8000);
    r.mark('m1');
    r.push(4000);
    r.mark('m2');
    r.at(5_000);
    const m1 = r.out.report('m1')!;
    const m2 = r.out.report('m2')!;
    const m1Played = r.out.playedAt(8000);
    const m2Played = r.out.playedAt(12_000);
    console.log(
      `marks by the bridge's reckoning: m1 ${m1.at - m1Played} ms after its audio played, m2 ${m2.at - m2Played} ms`,
    );
    // The caller, playing at real time from the first chunk, has played 1 s and 1.5 s by then.
    expect(m1Played).toBe(1000);
    expect(m2Played).toBe(1500);
    for (const [m, played] of [
      [m1, m1Played],
      [m2, m2Played],
    ] as const) {
      expect(m.cleared).toBe(false);
      expect(m.at).toBeGreaterThanOrEqual(played);
      expect(m.at).toBeLessThanOrEqual(played + 250);
      expect(m.at).toBe(played + MARK_GRACE_MS);
    }
    // The frames went to the provider with their audio (well before it played), and once each.
    expect(r.out.frames.map((f) => f.frame)).toEqual(['mark:m1', 'mark:m2']);
    expect(r.out.frames[0]!.at).toBeLessThan(m1Played);
    expect(r.out.reports.map((x) => x.name)).toEqual(['m1', 'm2']);
    expect(r.core.providerReports).toBe(false);
  });

  it('a mark inside a chunk is reckoned at its own place in it, not at the chunk end', () => {
    const r = rig();
    r.push(CHUNK * 10 + 100);
    r.mark('mid');
    r.push(CHUNK * 10);
    r.at(2_000);
    const played = r.out.playedAt(CHUNK * 10 + 100);
    expect(played).toBe(200 + 100 / BYTES_PER_MS);
    expect(r.out.report('mid')!.at).toBe(played + MARK_GRACE_MS);
  });

  it("after a stall, a burst's marks follow the caller's playback, not the burst", () => {
    const r = rig();
    r.push(CHUNK * 5);
    r.at(0);
    // The bot's next audio comes 60 ms late (the far end ran dry at 100 ms): it plays from when it left.
    r.at(160);
    r.push(CHUNK * 5);
    r.mark('after-gap');
    r.at(1_000);
    expect(r.out.playedAt(CHUNK * 10)).toBe(260);
    expect(r.out.report('after-gap')!.at).toBe(260 + MARK_GRACE_MS);
  });

  it('audio shed at a backed-up socket plays nothing: the mark behind it is not held for it', () => {
    const r = rig();
    // Three chunks leave at once (the lead); the socket is too backed up to take the second.
    r.out.shed.add(1);
    r.push(CHUNK * 3);
    r.mark('m');
    r.at(1_000);
    expect(r.out.sent).toHaveLength(2);
    expect(r.out.playedAt(CHUNK * 3)).toBe(40);
    expect(r.out.report('m')!.at).toBe(40 + MARK_GRACE_MS);
  });

  it('a caller that reports: its report counts, not the reckoning, before and after its first', () => {
    const r = rig();
    r.push(8000);
    r.mark('m1');
    r.push(4000);
    r.mark('m2');
    // The provider reports m1 10 ms after its audio played (before the bridge's grace is out).
    r.at(1010);
    r.report('m1');
    expect(r.out.report('m1')!.at).toBe(1010);
    expect(r.core.providerReports).toBe(true);
    // From now on its word counts: m2 is not reported by the reckoning (1550), only when it says so.
    r.at(1800);
    expect(r.out.report('m2')).toBeUndefined();
    r.report('m2');
    expect(r.out.report('m2')!.at).toBe(1800);
    expect(r.out.reports.map((x) => x.name)).toEqual(['m1', 'm2']);
  });

  it('a late report is not passed on again, but turns the call over to the provider; the fallback bounds it', () => {
    const r = rig();
    r.push(8000);
    r.mark('m1');
    r.at(1_400);
    expect(r.out.report('m1')!.at).toBe(1000 + MARK_GRACE_MS);
    // The provider's report comes late: once is enough for the bot.
    r.report('m1');
    expect(r.out.reports).toHaveLength(1);
    expect(r.core.providerReports).toBe(true);
    // The next mark waits for the provider, which never reports it: the fallback reports it.
    r.push(4000);
    r.mark('m2');
    r.at(1_500);
    const played = r.out.playedAt(12_000);
    r.at(played + MARK_FALLBACK_MS - 1);
    expect(r.out.report('m2')).toBeUndefined();
    r.at(played + MARK_FALLBACK_MS);
    expect(r.out.report('m2')!.at).toBe(played + MARK_FALLBACK_MS);
  });

  it("a provider's report reports the marks before it, in order; one it cannot match passes on", () => {
    const r = rig();
    r.push(CHUNK * 4);
    for (const name of ['a', 'b', 'c']) {
      r.push(CHUNK);
      r.mark(name);
    }
    r.at(80);
    expect(r.out.frames).toHaveLength(3);
    r.report('c');
    expect(r.out.reports.map((x) => x.name)).toEqual(['a', 'b', 'c']);
    expect(r.out.reports.every((x) => x.at === 80 && !x.cleared)).toBe(true);
    r.report('not-ours');
    expect(r.out.reports.map((x) => x.name)).toEqual(['a', 'b', 'c', 'not-ours']);
  });

  it('a clear reports every mark not yet reported at once, cleared; the provider then returning them changes nothing', () => {
    const r = rig();
    r.push(CHUNK * 10);
    r.mark('played');
    r.push(CHUNK * 10);
    r.mark('sent');
    r.push(CHUNK * 50);
    r.mark('queued');
    r.at(250);
    expect(r.out.reports.map((x) => x.name)).toEqual(['played']);
    r.at(300);
    const dropped = r.core.clear(300, false);
    expect(dropped).toBeGreaterThan(0);
    expect(r.out.cuts).toEqual([true]);
    expect(r.out.reports.slice(1)).toEqual([
      { at: 300, name: 'sent', cleared: true },
      { at: 300, name: 'queued', cleared: true },
    ]);
    // The queued mark's frame still goes, right after the clear (the provider then holds nothing).
    expect(r.out.frames.map((f) => f.frame)).toEqual(['mark:played', 'mark:sent', 'mark:queued']);
    r.report('sent', true);
    r.report('queued', true);
    r.at(5_000);
    expect(r.out.reports).toHaveLength(3);
    // Nothing since the clear: a second clear tells the provider nothing to drop.
    r.core.clear(5_000, false);
    expect(r.out.cuts).toEqual([true, false]);
  });

  it('a bot that names every mark alike, a caller that plays 80 ms behind the reckoning: no mark is reported early once the provider has spoken', () => {
    const r = rig({ leadMs: 60 });
    // Ten chunks, each followed by a mark of one name (as Twilio's Realtime samples mark every delta).
    for (let i = 0; i < 10; i++) {
      r.push(CHUNK);
      r.mark('part');
    }
    // The provider reports each mark when it has played its audio: 80 ms after the bridge's reckoning
    // (the audio plays back to back from 0, 20 ms a chunk).
    const heard = Array.from({ length: 10 }, (_, i) => (i + 1) * 20 + 80);
    for (const t of heard) {
      r.at(t);
      r.report('part');
    }
    r.at(5_000);
    for (let i = 0; i < 10; i++) expect(r.out.playedAt(CHUNK * (i + 1))).toBe(heard[i]! - 80);
    expect(r.out.reports).toHaveLength(10);
    // Before the provider's first report the bridge goes by its reckoning (the documented exception);
    // every mark after it is reported when the provider plays it, not at an earlier mark's report.
    const first = heard[0]!;
    for (let i = 0; i < 10; i++) {
      const at = r.out.reports[i]!.at;
      if (at < first) expect(at).toBe(heard[i]! - 80 + MARK_GRACE_MS);
      else expect(at).toBe(heard[i]);
    }
    expect(r.out.reports.filter((x) => x.at >= first).length).toBeGreaterThan(5);
  });

  it('a mark with no frame of its own (a platform without marks) is only ever reckoned', () => {
    const r = rig();
    r.push(CHUNK * 10);
    r.wake(r.core.mark('silent', undefined, 0));
    r.at(1_000);
    expect(r.out.frames).toEqual([]);
    expect(r.out.report('silent')!.at).toBe(200 + MARK_GRACE_MS);
  });
});

/**
 * A stream of 20 ms chunks made at real time (chunk i at i * 20 ms) whose first `heldMs` were held up on
 * their way and came at once at `heldMs`; the rest come as made. Pushed in `piece`-byte pushes (a whole
 * chunk by default). Returns each chunk's send time less the time it was made: its delay.
 */
function heldUpStream(live: boolean, heldMs: number, chunks = 150, piece = CHUNK): number[] {
  const r = rig({ live });
  for (let i = 0; i < chunks; i++) {
    r.at(Math.max(i * 20, heldMs));
    for (let at = 0; at < CHUNK; at += piece) r.push(Math.min(piece, CHUNK - at));
  }
  r.at(chunks * 20 + 2_000);
  return r.out.sent.map((s) => s.at - (s.end / CHUNK - 1) * 20);
}

describe('a live stream (the echo of the caller)', () => {
  it('whose first 300 ms came at once is paced on its own timeline: what waited leaves at once, then no delay', () => {
    const delays = heldUpStream(true, 300);
    expect(delays).toHaveLength(150);
    // The held-up chunks leave as they come (they are late), every chunk after as it is made.
    expect(Math.max(...delays)).toBe(300);
    expect(delays.slice(15).every((d) => d === 0)).toBe(true);
  });

  it('anchored at its first chunk (a bot reply), the same input keeps the hold-up for good, less the lead', () => {
    const delays = heldUpStream(false, 300);
    expect(delays).toHaveLength(150);
    expect(delays.slice(15).every((d) => d === 300 - 40)).toBe(true);
  });

  it('follows its timeline in pieces of any size', () => {
    const delays = heldUpStream(true, 300, 150, 60);
    expect(delays).toHaveLength(150);
    expect(delays.slice(15).every((d) => d === 0)).toBe(true);
  });

  it('a held-up start longer than PACE_CATCH_UP_MS is caught up to that bound only', () => {
    const delays = heldUpStream(true, 1_500, 200);
    // 1 s of the 1.5 s is caught up; the rest stays, as it does after a stall that long mid-run.
    expect(delays.slice(80).every((d) => d === 500 - 40)).toBe(true);
  });

  it("a bot's reply that comes at once is paced from its first chunk, then its trickle at real time", () => {
    const r = rig();
    r.push(CHUNK * 50); // 1 s at once
    for (let t = 20; t <= 2_000; t += 20) {
      r.at(t);
      r.push(CHUNK); // and then one chunk every 20 ms
    }
    r.at(5_000);
    // Chunk i leaves at i * 20 - 40: the second of audio that came at once is never sent ahead.
    expect(r.out.sent.map((s) => s.at)).toEqual(r.out.sent.map((_, i) => Math.max(0, i * 20 - 40)));
  });
});
