/**
 * The REST limit's store: a fixed window per address from its first request, read from the clock it is
 * given, at most `capacity` addresses (the least recently seen forgotten first), each route's own apart.
 */
import { describe, expect, it } from 'vitest';
import { windowStore } from '../../src/limits/window-store.js';
import { ManualClock } from '../helpers/clock.js';

type Store = InstanceType<ReturnType<typeof windowStore>>;

function hit(store: Store, key: string, windowMs = 1_000): { current: number; ttl: number } {
  let out: { current: number; ttl: number } | undefined;
  store.incr(
    key,
    (err, res) => {
      if (err !== null) throw err;
      out = res;
    },
    windowMs,
    10,
  );
  return out!;
}

describe('windowStore', () => {
  it('counts within a window from the first request, and starts afresh when it has passed', () => {
    const clock = new ManualClock();
    const Store = windowStore(clock, 100);
    const store = new Store({});
    expect(hit(store, 'a')).toEqual({ current: 1, ttl: 1_000 });
    clock.advance(400);
    expect(hit(store, 'a')).toEqual({ current: 2, ttl: 600 });
    expect(hit(store, 'b')).toEqual({ current: 1, ttl: 1_000 });
    clock.advance(599);
    expect(hit(store, 'a')).toEqual({ current: 3, ttl: 1 });
    clock.advance(1);
    expect(hit(store, 'a')).toEqual({ current: 1, ttl: 1_000 });
  });

  it('forgets the least recently seen address past its capacity; a route store counts apart', () => {
    const clock = new ManualClock();
    const store = new (windowStore(clock, 2))({});
    hit(store, 'a');
    hit(store, 'b');
    hit(store, 'a');
    hit(store, 'c');
    // 'b' was seen least recently: forgotten, it starts again at 1; 'a' and 'c' are kept.
    expect(hit(store, 'b').current).toBe(1);
    expect(hit(store, 'c').current).toBe(2);
    const route = store.child({} as never);
    expect(hit(route, 'c').current).toBe(1);
    expect(hit(store, 'c').current).toBe(3);
  });
});
