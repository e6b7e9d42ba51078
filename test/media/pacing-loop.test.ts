/**
 * The shared pacing loop: members are serviced at the times they ask for (not before, and not all of
 * them on every wake-up), in time order, with a deleted member never serviced again. The loop runs on a
 * hand-driven clock, so every service time is exact; real-time jitter is measured by the media tests.
 */
import { describe, expect, it } from 'vitest';
import { type Paced, PacingLoop } from '../../src/media/pacing-loop.js';
import { ManualClock } from '../helpers/clock.js';

/** Asks to be serviced at each of `times` (ms after creation) in turn; records when it was. */
class Member implements Paced {
  readonly serviced: number[] = [];
  #i = 0;
  constructor(
    readonly name: string,
    readonly t0: number,
    readonly times: number[],
    readonly log: string[],
  ) {}
  get next(): number {
    const t = this.times[this.#i];
    return t === undefined ? Number.POSITIVE_INFINITY : this.t0 + t;
  }
  service(now: number): number {
    if (now >= this.next) {
      this.serviced.push(now - this.t0);
      this.log.push(this.name);
      this.#i++;
    }
    return this.next;
  }
}

describe('PacingLoop', () => {
  it('services each member at its own times, not before them, in time order', () => {
    const clock = new ManualClock();
    const loop = new PacingLoop(1, clock);
    const t0 = clock.now();
    const log: string[] = [];
    const a = new Member('a', t0, [30, 90], log);
    const b = new Member('b', t0, [10, 60], log);
    const idle = new Member('idle', t0, [], log);
    for (const m of [a, b, idle]) loop.add(m);
    loop.wakeBy(a, a.next);
    loop.wakeBy(b, b.next);
    clock.advance(29);
    expect(log).toEqual(['b']);
    clock.advance(131);
    expect(log).toEqual(['b', 'a', 'b', 'a']);
    expect(a.serviced).toEqual([30, 90]);
    expect(b.serviced).toEqual([10, 60]);
    expect(idle.serviced).toEqual([]);
    // Nothing left to do: no timer stays armed.
    expect(clock.pending).toBe(0);
    loop.stop();
  });

  it('a later wake-up request does not delay an earlier one; an earlier one takes over', () => {
    const clock = new ManualClock();
    const loop = new PacingLoop(1, clock);
    const t0 = clock.now();
    const log: string[] = [];
    const m = new Member('m', t0, [20], log);
    loop.add(m);
    loop.wakeBy(m, t0 + 200);
    loop.wakeBy(m, t0 + 20);
    loop.wakeBy(m, t0 + 300);
    clock.advance(400);
    expect(m.serviced).toEqual([20]);
    loop.stop();
  });

  it('never services a member once deleted, and ignores wake-ups for members it does not have', () => {
    const clock = new ManualClock();
    const loop = new PacingLoop(1, clock);
    const t0 = clock.now();
    const log: string[] = [];
    const gone = new Member('gone', t0, [20], log);
    const stranger = new Member('stranger', t0, [20], log);
    const stays = new Member('stays', t0, [25], log);
    loop.add(gone);
    loop.add(stays);
    loop.wakeBy(gone, gone.next);
    loop.wakeBy(stays, stays.next);
    loop.wakeBy(stranger, stranger.next);
    loop.delete(gone);
    clock.advance(80);
    expect(log).toEqual(['stays']);
    expect(stays.serviced).toEqual([25]);
    loop.stop();
  });

  it('serves 200 members with interleaved times in the order of the times they asked for', () => {
    const clock = new ManualClock();
    const loop = new PacingLoop(1, clock);
    const t0 = clock.now();
    const log: string[] = [];
    const members: Member[] = [];
    for (let i = 0; i < 200; i++) {
      const m = new Member(String(i), t0, [5 + ((i * 37) % 50), 60 + ((i * 17) % 40)], log);
      members.push(m);
      loop.add(m);
      loop.wakeBy(m, m.next);
    }
    clock.advance(200);
    // Every service happened at the time asked (wake-ups are 1 ms apart at most, the times whole ms).
    for (const m of members) expect(m.serviced).toEqual(m.times);
    // And in the order of the asked times: the log, read back as asked times, never goes down.
    const next = new Map<string, number>();
    const asked = log.map((name) => {
      const k = next.get(name) ?? 0;
      next.set(name, k + 1);
      return members[Number(name)]!.times[k]!;
    });
    expect(asked).toHaveLength(400);
    for (let i = 1; i < asked.length; i++) expect(asked[i]!).toBeGreaterThanOrEqual(asked[i - 1]!);
    loop.stop();
  });

  it('wakes at most once per minGapMs: a member due sooner waits for the gap, and is not serviced early', () => {
    const clock = new ManualClock();
    const loop = new PacingLoop(5, clock);
    const t0 = clock.now();
    const log: string[] = [];
    const first = new Member('first', t0, [10], log);
    const soon = new Member('soon', t0, [12], log);
    for (const m of [first, soon]) loop.add(m);
    loop.wakeBy(first, first.next);
    clock.advance(10);
    expect(first.serviced).toEqual([10]);
    loop.wakeBy(soon, soon.next);
    clock.advance(4);
    expect(soon.serviced).toEqual([]);
    clock.advance(1);
    expect(soon.serviced).toEqual([15]);
    loop.stop();
  });

  it('stop() disarms its timer: nothing is serviced after it', () => {
    const clock = new ManualClock();
    const loop = new PacingLoop(1, clock);
    const log: string[] = [];
    const m = new Member('m', clock.now(), [10], log);
    loop.add(m);
    loop.wakeBy(m, m.next);
    loop.stop();
    clock.advance(100);
    expect(log).toEqual([]);
    expect(clock.pending).toBe(0);
  });
});
