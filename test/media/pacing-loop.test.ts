/**
 * The shared pacing loop: members are serviced at the times they ask for (not before, and not all of
 * them on every wake-up), in time order, with a deleted member never serviced again.
 */
import { describe, expect, it } from 'vitest';
import { type Paced, PacingLoop } from '../../src/media/pacing-loop.js';

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('PacingLoop', () => {
  it('services each member at its own times, not before them, in time order', async () => {
    const loop = new PacingLoop(1);
    const t0 = performance.now();
    const log: string[] = [];
    const a = new Member('a', t0, [30, 90], log);
    const b = new Member('b', t0, [10, 60], log);
    const idle = new Member('idle', t0, [], log);
    for (const m of [a, b, idle]) loop.add(m);
    loop.wakeBy(a, a.next);
    loop.wakeBy(b, b.next);
    await sleep(160);
    expect(log).toEqual(['b', 'a', 'b', 'a']);
    for (const [m, want] of [
      [a, [30, 90]],
      [b, [10, 60]],
    ] as const) {
      expect(m.serviced.length).toBe(2);
      m.serviced.forEach((at, i) => {
        expect(at).toBeGreaterThanOrEqual(want[i]!);
        // Timers on a busy test machine can be late; never early, and not wildly late.
        expect(at).toBeLessThan(want[i]! + 40);
      });
    }
    expect(idle.serviced).toEqual([]);
    loop.stop();
  });

  it('a later wake-up request does not delay an earlier one; an earlier one takes over', async () => {
    const loop = new PacingLoop(1);
    const t0 = performance.now();
    const log: string[] = [];
    const m = new Member('m', t0, [20], log);
    loop.add(m);
    loop.wakeBy(m, t0 + 200);
    loop.wakeBy(m, t0 + 20);
    loop.wakeBy(m, t0 + 300);
    await sleep(80);
    expect(m.serviced.length).toBe(1);
    expect(m.serviced[0]).toBeLessThan(60);
    loop.stop();
  });

  it('never services a member once deleted, and ignores wake-ups for members it does not have', async () => {
    const loop = new PacingLoop(1);
    const t0 = performance.now();
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
    await sleep(80);
    expect(log).toEqual(['stays']);
    loop.stop();
  });

  it('serves 200 members with interleaved times in the order of the times they asked for', async () => {
    const loop = new PacingLoop(1);
    const t0 = performance.now();
    const log: string[] = [];
    const members: Member[] = [];
    for (let i = 0; i < 200; i++) {
      const m = new Member(String(i), t0, [5 + ((i * 37) % 50), 60 + ((i * 17) % 40)], log);
      members.push(m);
      loop.add(m);
      loop.wakeBy(m, m.next);
    }
    await sleep(200);
    for (const m of members) expect(m.serviced.length).toBe(2);
    // Every service happened no earlier than asked.
    for (const m of members)
      for (const [i, at] of m.serviced.entries()) expect(at).toBeGreaterThanOrEqual(m.times[i]!);
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
});
