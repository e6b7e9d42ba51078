/**
 * The shared paced caller's schedule on a clock the test drives (no sleeping): chunk k leaves at
 * t0 + k·chunk however late the wake-ups come, every due chunk goes out on a late wake-up, cues ride the
 * schedule, and `until`, `live` and a throwing sender end it. The caller in front of a leg sheds chunks
 * while the socket is backed up and fills chunks from a function.
 */
import { describe, expect, it } from 'vitest';
import type { ProviderLeg } from '../../src/emulator/dialects/index.js';
import { PacedCaller, PacedSchedule, SEND_HIGH_WATER_BYTES } from '../../src/emulator/paced-caller.js';
import { ManualClock } from '../helpers/clock.js';

function record(clock: ManualClock) {
  const sent: { index: number; at: number; late: number }[] = [];
  return { sent, send: (index: number, late: number) => sent.push({ index, at: clock.now(), late }) };
}

describe('paced schedule', () => {
  it('sends chunk k at t0 + k·chunk, without drift, and finishes after the last', async () => {
    const clock = new ManualClock();
    const r = record(clock);
    const s = new PacedSchedule({ chunkMs: 20, chunks: 500, send: r.send, clock }).start();
    expect(r.sent).toHaveLength(1);
    // Time passes in odd steps: the wake-ups land wherever, the chunks keep to the grid.
    for (let i = 0; i < 2_000 && s.running; i++) clock.advance(7);
    await s.done;
    expect(r.sent.map((x) => x.index)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    // Each went out at its due time or within one minimum gap of the loop plus a step, never before.
    for (const x of r.sent) {
      expect(x.at).toBeGreaterThanOrEqual(1_000 + x.index * 20);
      expect(x.late).toBeLessThanOrEqual(7 + 2);
      expect(x.late).toBeCloseTo(x.at - (1_000 + x.index * 20), 9);
    }
    // The 500th chunk is due at 1000 + 499·20: ten seconds on, not ten seconds plus the lateness.
    expect(r.sent.at(-1)!.at - 1_000 - 499 * 20).toBeLessThanOrEqual(9);
  });

  it('after a stall, sends every due chunk at once and keeps the original schedule', () => {
    const clock = new ManualClock();
    const r = record(clock);
    const s = new PacedSchedule({ chunkMs: 20, chunks: 100, send: r.send, clock });
    s.service(clock.now()); // not started: nothing
    expect(r.sent).toHaveLength(0);
    s.start();
    const t0 = s.startedAt;
    // The process stalls for 105 ms: the next service sends chunks 1..5 together.
    const next = s.service(t0 + 105);
    expect(r.sent.map((x) => x.index)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(r.sent[1]!.late).toBeCloseTo(85, 9);
    expect(next).toBe(t0 + 120);
    s.stop();
  });

  it('runs cues in time order alongside the chunks, and drops those past the last chunk', async () => {
    const clock = new ManualClock();
    const order: string[] = [];
    const s = new PacedSchedule({
      chunkMs: 20,
      chunks: 5,
      send: (i) => order.push(`c${i}`),
      cues: [
        { atMs: 50, run: () => order.push('k2') },
        { atMs: 20, run: () => order.push('k1') },
        { atMs: 500, run: () => order.push('never') },
      ],
      clock,
    }).start();
    clock.advance(200);
    await s.done;
    expect(order).toEqual(['c0', 'k1', 'c1', 'c2', 'k2', 'c3', 'c4']);
  });

  it('stops at `until`, when `live` turns false, and rejects when the sender throws', async () => {
    const clock = new ManualClock();
    const a = record(clock);
    const until = clock.now() + 100;
    const s1 = new PacedSchedule({ chunkMs: 20, chunks: Infinity, until, send: a.send, clock }).start();
    clock.advance(1_000);
    await s1.done;
    expect(a.sent.map((x) => x.index)).toEqual([0, 1, 2, 3, 4]);

    let open = true;
    const b = record(clock);
    const s2 = new PacedSchedule({ chunkMs: 20, chunks: Infinity, live: () => open, send: b.send, clock });
    s2.start();
    clock.advance(60);
    open = false;
    clock.advance(200);
    await s2.done;
    expect(b.sent).toHaveLength(4);
    expect(clock.pending).toBe(0);

    const s3 = new PacedSchedule({
      chunkMs: 20,
      chunks: 10,
      send: (i) => {
        if (i === 2) throw new Error('socket gone');
      },
      clock,
    }).start();
    clock.advance(100);
    await expect(s3.done).rejects.toThrow('socket gone');
    expect(() => new PacedSchedule({ chunkMs: 0, chunks: 1, send: () => {} })).toThrow(/chunkMs/);
  });
});

/** A leg that records what it was given; `backlog` stands for the socket's unsent bytes. */
function fakeLeg(): ProviderLeg & { chunks: Int16Array[]; digits: string[]; backlog: number } {
  const leg = {
    dialect: 'default' as const,
    rate: 8000,
    outputRate: 8000,
    chunkMs: 20,
    record: {} as ProviderLeg['record'],
    chunks: [] as Int16Array[],
    digits: [] as string[],
    backlog: 0,
    open: async () => true,
    sendAudio: (pcm: Int16Array) => leg.chunks.push(pcm.slice()),
    sendDtmf: (d: string) => leg.digits.push(d),
    hangup: async () => {},
    closed: new Promise<void>(() => {}),
    isOpen: () => true,
    backlogBytes: () => leg.backlog,
    heard: () => new Int16Array(0),
    timeline: [],
  };
  return leg;
}

describe('paced caller', () => {
  it('sends pre-rendered audio a chunk at a time through the leg, the last chunk short, keys on time', async () => {
    const clock = new ManualClock();
    const leg = fakeLeg();
    const audio = Int16Array.from({ length: 8000 + 80 }, (_, i) => i % 1000);
    const c = new PacedCaller({ leg, audio, clock, dtmf: [{ digit: '5', atMs: 500 }] }).start();
    clock.advance(1_100);
    await c.done;
    expect(leg.chunks).toHaveLength(51);
    expect(leg.chunks.slice(0, 50).every((p) => p.length === 160)).toBe(true);
    expect(leg.chunks[50]!.length).toBe(80);
    expect(leg.chunks[7]![0]).toBe(audio[7 * 160]);
    expect(leg.digits).toEqual(['5']);
    expect(c.stats).toEqual({ chunksSent: 51, chunksShed: 0, samplesSent: 8080 });
  });

  it('sheds the chunks due while the socket is backed up, and fills chunks from a function', async () => {
    const clock = new ManualClock();
    const leg = fakeLeg();
    const sentIdx: number[] = [];
    const c = new PacedCaller({
      leg,
      audio: (index, out) => out.fill(index),
      chunks: 10,
      clock,
      onSent: (index) => sentIdx.push(index),
    }).start();
    clock.advance(40);
    leg.backlog = SEND_HIGH_WATER_BYTES + 1;
    clock.advance(60);
    leg.backlog = 0;
    clock.advance(200);
    await c.done;
    expect(sentIdx).toEqual([0, 1, 2, 6, 7, 8, 9]);
    expect(leg.chunks.map((p) => p[0])).toEqual([0, 1, 2, 6, 7, 8, 9]);
    expect(c.stats.chunksShed).toBe(3);
  });
});
