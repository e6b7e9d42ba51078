import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { backoffMs, delay, SendSlots, type Slot } from '../../src/messaging/rate.js';
import { maxInWindow } from '../helpers/window.js';

describe('send slots', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** The slots' clock: the fake timers' own. */
  const clock = () => Date.now();

  /** The slot an acquire resolved with, or a failure when it did not resolve with one. */
  async function granted(p: Promise<Slot | undefined>): Promise<Slot> {
    const slot = await p;
    if (slot === undefined) throw new Error('no slot');
    return slot;
  }

  it('grants at most limit at once; a slot is free again only windowMs after its release', async () => {
    const slots = new SendSlots({ limit: 3, windowMs: 1_000, now: clock });
    const first = await Promise.all([0, 1, 2].map(() => granted(slots.acquire(10_000))));
    expect(slots.held).toBe(3);
    let fourth: Slot | undefined;
    void slots.acquire(10_000).then((s) => {
      fourth = s;
    });
    // Held in flight for 5 s: nothing frees, however long it takes.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(fourth).toBeUndefined();
    expect(slots.waiting).toBe(1);
    const releasedAt = Date.now();
    first[0]!.release();
    first[0]!.release(); // a second release changes nothing
    await vi.advanceTimersByTimeAsync(999);
    expect(fourth).toBeUndefined();
    expect(slots.held).toBe(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(fourth?.admittedAt).toBe(releasedAt + 1_000);
    expect(slots.held).toBe(3);
    expect(slots.waiting).toBe(0);
  });

  it('checks the clock on wake: a timer that fires early does not free the slot early', async () => {
    // The timer is set at a clock reading 1 ms ahead of the timers' own, then the clock reads theirs:
    // the timer fires when the clock is still 1 ms short, as with performance.now().
    let ahead = 1;
    const slots = new SendSlots({ limit: 1, windowMs: 100, now: () => Date.now() + ahead });
    const slot = await granted(slots.acquire(1_000));
    const freeAt = Date.now() + ahead + 100;
    slot.release();
    ahead = 0;
    let next: Slot | undefined;
    void slots.acquire(1_000).then((s) => {
      next = s;
    });
    await vi.advanceTimersByTimeAsync(100);
    expect(next).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(next?.admittedAt).toBeGreaterThanOrEqual(freeAt);
  });

  it('serves waiters first come, first served', async () => {
    const slots = new SendSlots({ limit: 2, windowMs: 100, now: clock });
    const held = await Promise.all([granted(slots.acquire(10_000)), granted(slots.acquire(10_000))]);
    const order: number[] = [];
    const waits = Array.from({ length: 6 }, (_, i) =>
      granted(slots.acquire(10_000)).then((s) => {
        order.push(i);
        // Each holds its slot 30 ms, then answers.
        setTimeout(() => s.release(), 30);
      }),
    );
    for (const s of held) s.release();
    await vi.advanceTimersByTimeAsync(2_000);
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('never holds more than limit, and no window of windowMs sees more than limit arrivals (random network)', async () => {
    let seed = 11;
    const random = () => {
      seed = (seed * 48271) % 2147483647;
      return seed / 2147483647;
    };
    for (let run = 0; run < 5; run++) {
      const limit = 1 + Math.floor(random() * 40);
      const slots = new SendSlots({ limit, windowMs: 1_000, now: clock });
      const arrivals: number[] = [];
      let most = 0;
      const sends = Array.from({ length: 300 }, async (_, i) => {
        // Asked over the first 2 s, in bursts.
        await delay(random() < 0.5 ? 0 : Math.floor(random() * 2_000));
        const slot = await granted(slots.acquire(Number.POSITIVE_INFINITY));
        most = Math.max(most, slots.held);
        // The way there and the way back each take 0 to 300 ms; the first `limit` asked take longer there.
        await delay(Math.floor(random() * 300) + (i < limit ? 300 : 0));
        arrivals.push(Date.now());
        await delay(Math.floor(random() * 300));
        slot.release();
      });
      await vi.runAllTimersAsync();
      await Promise.all(sends);
      expect(arrivals).toHaveLength(300);
      expect(most).toBeLessThanOrEqual(limit);
      expect(maxInWindow(arrivals, 1_000)).toBeLessThanOrEqual(limit);
    }
  });

  it('refuses at once when the queue ahead could not be served within the bound', async () => {
    const slots = new SendSlots({ limit: 2, windowMs: 1_000, now: clock });
    const held = await Promise.all([granted(slots.acquire(0)), granted(slots.acquire(0))]);
    // Both in flight: the earliest either could free is 1 s from now.
    await expect(slots.acquire(999)).resolves.toBeUndefined();
    expect(slots.waiting).toBe(0);
    // Answered now: free in 1 s.
    for (const s of held) s.release();
    const a = slots.acquire(1_000);
    const b = slots.acquire(1_000);
    expect(slots.waiting).toBe(2);
    // Two ahead, two slots: the third's slot is a window after one of theirs, 2 s away at the soonest.
    await expect(slots.acquire(1_999)).resolves.toBeUndefined();
    const c = slots.acquire(2_000);
    expect(slots.waiting).toBe(3);
    const t0 = Date.now();
    await vi.advanceTimersByTimeAsync(1_000);
    const [sa, sb] = await Promise.all([granted(a), granted(b)]);
    expect([sa.admittedAt, sb.admittedAt]).toEqual([t0 + 1_000, t0 + 1_000]);
    // The first two hold theirs past c's bound: c gives up at its deadline, not before.
    let cAnswered = false;
    void c.then(() => {
      cAnswered = true;
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(cAnswered).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await expect(c).resolves.toBeUndefined();
    expect(slots.waiting).toBe(0);
    expect(slots.held).toBe(2);
    // A negative bound gets nothing, even from a free slot.
    sa.release();
    sb.release();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(slots.held).toBe(0);
    await expect(slots.acquire(-1)).resolves.toBeUndefined();
  });

  it('an aborted wait leaves the queue; the slot goes to the next in line', async () => {
    const slots = new SendSlots({ limit: 1, windowMs: 50, now: clock });
    const slot = await granted(slots.acquire(1_000));
    const ac = new AbortController();
    const gone = slots.acquire(1_000, ac.signal);
    const next = slots.acquire(1_000);
    ac.abort(new Error('gone'));
    await expect(gone).rejects.toThrow('gone');
    expect(slots.waiting).toBe(1);
    slot.release();
    await vi.advanceTimersByTimeAsync(50);
    await expect(next).resolves.toBeDefined();
    await expect(slots.acquire(1_000, AbortSignal.abort(new Error('before')))).rejects.toThrow('before');
    await expect(delay(1, AbortSignal.abort(new Error('before')))).rejects.toThrow('before');
  });

  it('a release with a hold keeps the slot that much longer than windowMs', async () => {
    const slots = new SendSlots({ limit: 1, windowMs: 1_000, now: clock });
    const slot = await granted(slots.acquire(0));
    const releasedAt = Date.now();
    slot.release(1_000);
    const next = slots.acquire(5_000);
    await vi.advanceTimersByTimeAsync(1_999);
    expect(slots.waiting).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect((await granted(next)).admittedAt).toBe(releasedAt + 2_000);
  });

  it('close clears the release timers and rejects the waiters at once, and every later acquire', async () => {
    const slots = new SendSlots({ limit: 2, windowMs: 1_000, now: clock });
    const [a, b] = await Promise.all([granted(slots.acquire(0)), granted(slots.acquire(0))]);
    a.release();
    b.release(5_000);
    const waiting = [slots.acquire(10_000), slots.acquire(10_000)];
    expect(slots.waiting).toBe(2);
    expect(vi.getTimerCount()).toBe(4);
    const reason = new Error('closing');
    slots.close(reason);
    expect(slots.closed).toBe(true);
    for (const w of waiting) await expect(w).rejects.toBe(reason);
    expect(slots.waiting).toBe(0);
    expect(slots.held).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    await expect(slots.acquire(10_000)).rejects.toBe(reason);
    // A send still in flight at the close answers afterwards: its release sets no timer.
    const late = new SendSlots({ limit: 1, windowMs: 1_000, now: clock });
    const inFlight = await granted(late.acquire(0));
    late.close();
    inFlight.release();
    expect(vi.getTimerCount()).toBe(0);
    await expect(late.acquire(0)).rejects.toThrow('send slots closed');
  });

  it('refuses nonsense options', () => {
    expect(() => new SendSlots({ limit: 0 })).toThrow(RangeError);
    expect(() => new SendSlots({ limit: 1.5 })).toThrow(RangeError);
    expect(() => new SendSlots({ windowMs: 0 })).toThrow(RangeError);
  });
});

describe('full-jitter backoff', () => {
  it('stays within [0, min(cap, base * 2^attempt))', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 48271) % 2147483647;
      return seed / 2147483647;
    };
    for (let attempt = 0; attempt < 12; attempt++) {
      const ceiling = Math.min(5_000, 100 * 2 ** attempt);
      for (let i = 0; i < 1_000; i++) {
        const ms = backoffMs(attempt, 100, 5_000, random);
        expect(ms).toBeGreaterThanOrEqual(0);
        expect(ms).toBeLessThan(ceiling);
      }
    }
  });

  it('uses the whole range: 0 at random 0, just under the ceiling near 1', () => {
    expect(backoffMs(0, 250, 8_000, () => 0)).toBe(0);
    expect(backoffMs(0, 250, 8_000, () => 0.9999)).toBe(249);
    expect(backoffMs(3, 250, 8_000, () => 0.5)).toBe(1_000);
    expect(backoffMs(10, 250, 8_000, () => 0.9999)).toBe(7_999);
  });
});
