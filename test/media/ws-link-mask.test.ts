/** The masking keys of frames to a ws bot: never all zeros, so ws always masks into its own copy. */
import { describe, expect, it } from 'vitest';
import { nonZeroMasks } from '../../src/media/bot/ws-link.js';

describe('masking keys for frames to a bot', () => {
  it('redraws an all-zero key', () => {
    // A source whose first pool is zeros but for one key: every zero key is skipped.
    let pools = 0;
    const gen = nonZeroMasks((pool) => {
      pools++;
      pool.fill(pools === 1 ? 0 : 7);
      if (pools === 1) pool.writeUInt32BE(0x01020304, 8);
    });
    const mask = Buffer.alloc(4);
    gen(mask);
    expect([...mask]).toEqual([1, 2, 3, 4]); // keys 0 and 1 of the pool were zeros
    gen(mask);
    expect([...mask]).toEqual([7, 7, 7, 7]); // the rest of pool 1 is zeros: a new pool was drawn
    expect(pools).toBe(2);
  });

  it('gives different keys from the CSPRNG', () => {
    const gen = nonZeroMasks();
    const seen = new Set<number>();
    const mask = Buffer.alloc(4);
    for (let i = 0; i < 5000; i++) {
      gen(mask);
      expect(mask.readUInt32BE(0)).not.toBe(0);
      seen.add(mask.readUInt32BE(0));
    }
    expect(seen.size).toBeGreaterThan(4990);
  });
});
