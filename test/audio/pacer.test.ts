import { describe, expect, it } from 'vitest';
import { PaceClock } from '../../src/audio/pacer.js';

/** Simulates a pacing loop ticking every `tickMs` with `chunks` queued; returns send times. */
function run(clock: PaceClock, chunks: number, tickMs: number, start = 1000): number[] {
  const sent: number[] = [];
  for (let now = start; sent.length < chunks; now += tickMs) {
    while (sent.length < chunks && clock.isDue(now)) {
      clock.sent(now);
      sent.push(now);
    }
  }
  return sent;
}

describe('PaceClock', () => {
  it('sends the lead at once, then one chunk per chunk duration', () => {
    const c = new PaceClock(20, 40);
    const sent = run(c, 153, 1);
    expect(sent.slice(0, 3)).toEqual([1000, 1000, 1000]); // 40 ms lead = two chunks ahead
    for (let i = 3; i < sent.length; i++) expect(sent[i]).toBe(1000 + i * 20 - 40);
  });

  it('does not drift with a coarse, uneven tick', () => {
    const c = new PaceClock(20, 0);
    // 7.3 ms ticks never line up with 20 ms chunks; the schedule still holds over 3000 chunks (60 s).
    const sent = run(c, 3000, 7.3);
    const last = sent[sent.length - 1]!;
    const ideal = 1000 + 2999 * 20;
    expect(last - ideal).toBeGreaterThanOrEqual(0);
    expect(last - ideal).toBeLessThan(7.3);
    // A sleep-based loop would be 3000 * (tick rounding) late by now; check spacing never compounds.
    for (let i = 1; i < sent.length; i++) expect(sent[i]! - (1000 + i * 20)).toBeLessThan(7.3);
  });

  it('keeps the schedule when a chunk is a little late (within one chunk of grace)', () => {
    const c = new PaceClock(20, 0);
    c.sent(0);
    expect(c.sent(35)).toBe(15); // chunk 1 was due at 20
    expect(c.nextDueAt()).toBe(40); // still on the run that started at 0
  });

  it('reports lateness against the schedule', () => {
    const c = new PaceClock(20, 10);
    expect(c.sent(100)).toBe(0);
    expect(c.nextDueAt()).toBe(110);
    expect(c.sent(115)).toBe(5);
    expect(c.nextDueAt()).toBe(130);
  });

  it('catches up after a short underrun or stall instead of adding it to the delay for good', () => {
    const c = new PaceClock(20, 40, 200);
    run(c, 10, 1, 0); // chunks 0..9 of a run that started at 0; chunk 10 plays out at 200
    c.idle(390);
    expect(c.running).toBe(true); // within the 200 ms catch-up bound
    // Audio comes back at 390, 190 ms behind: the owed chunks leave at once, then the schedule holds.
    const sent = run(c, 20, 1, 390);
    expect(sent.filter((t) => t === 390)).toHaveLength(12); // chunks 10..21: due by 390 + 40 ms lead
    expect(sent[12]).toBe(400); // chunk 22 on the original schedule: 22 * 20 - 40
    expect(sent[19]).toBe(540);
    // A stall within the bound: chunk 30 plays out at 600; at 790 every owed chunk leaves at once.
    expect(c.sent(790)).toBe(230);
    let burst = 0;
    while (c.isDue(790)) {
      c.sent(790);
      burst++;
    }
    expect(burst).toBe(11); // chunks 31..41: chunk i is due at i * 20 - 40 <= 790
    expect(c.nextDueAt()).toBe(42 * 20 - 40); // back on the schedule of the run that started at 0
  });

  it('starts a new run after a pause longer than the catch-up bound, without a burst', () => {
    const c = new PaceClock(20, 40, 200);
    run(c, 10, 1, 0);
    c.idle(400);
    expect(c.running).toBe(true);
    c.idle(401);
    expect(c.running).toBe(false);
    // The next utterance at 1000: a new run with the lead, then real time; nothing "owed" since 200.
    const sent = run(c, 10, 1, 1000);
    expect(sent.slice(0, 3)).toEqual([1000, 1000, 1000]);
    expect(sent[3]).toBe(1020);
    expect(sent[9]).toBe(1140);
  });

  it('restarts when a chunk leaves more than the bound after its playout time (a long stall)', () => {
    const c = new PaceClock(20, 20, 200);
    c.sent(0); // run starts at 0; chunk 1 due at 0 (lead), playout at 20
    c.sent(0);
    // The loop stalls until 300: chunk 2's playout time (40) is 260 ms past, over the bound.
    expect(c.sent(300)).toBe(280);
    // Only the lead may follow at once, not the 13 chunks "owed".
    let burst = 0;
    while (c.isDue(300)) {
      c.sent(300);
      burst++;
    }
    expect(burst).toBe(1);
  });

  it('with the default bound of one chunk, any underrun past a chunk restarts the run', () => {
    const c = new PaceClock(20, 0);
    run(c, 5, 1, 0); // next chunk 5 plays out at 100
    c.idle(120);
    expect(c.running).toBe(true);
    c.idle(121);
    expect(c.running).toBe(false);
  });

  it('follow() moves a running schedule back to what a live stream shows, never later, at most catchUpMs', () => {
    const c = new PaceClock(20, 40, 200);
    c.follow(0); // between runs: nothing to move
    expect(c.nextDueAt()).toBe(-Infinity);
    c.sent(1000); // the run starts when its first chunk leaves
    expect(c.nextDueAt()).toBe(1000 + 20 - 40);
    c.follow(1100); // later: ignored
    expect(c.nextDueAt()).toBe(980);
    c.follow(900); // the stream showed its first chunk was ready 100 ms before it left
    expect(c.nextDueAt()).toBe(900 + 20 - 40);
    c.follow(500); // never more than catchUpMs (200) before the first chunk left
    expect(c.nextDueAt()).toBe(800 + 20 - 40);
    // A new run (after a reset, or a pause past the bound) is bounded from its own first chunk.
    c.reset();
    c.sent(5000);
    c.follow(4000);
    expect(c.nextDueAt()).toBe(4800 + 20 - 40);
  });

  it('reset() ends the run (after a clear)', () => {
    const c = new PaceClock(20, 0);
    c.sent(0);
    expect(c.isDue(5)).toBe(false);
    c.reset();
    expect(c.isDue(5)).toBe(true);
    expect(c.nextDueAt()).toBe(-Infinity);
  });
});
