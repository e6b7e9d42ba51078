/**
 * The echo bot's delay line: audio comes back byte for byte, in order, after the delay, across the
 * growth of its slots (a longer frame, more frames held), and never beyond its bounds.
 */
import { describe, expect, it } from 'vitest';
import { EchoBot } from '../../src/media/bot/builtin.js';
import type { CallerPort } from '../../src/media/bot/types.js';
import { PacingLoop } from '../../src/media/pacing-loop.js';

class Collect implements CallerPort {
  readonly frames: Uint8Array[] = [];
  audio(pcm: Uint8Array): void {
    // A copy: what the bot hands on is valid for the call only.
    this.frames.push(pcm.slice());
  }
  mark(): void {}
  dtmf(): void {}
  hangup(): void {}
  clear(): void {}
  failed(): void {}
}

/** Frame i: `len` bytes counting up from i * 7, so any reordering, loss or overlap shows. */
function frame(i: number, len: number): Uint8Array {
  const f = new Uint8Array(len);
  for (let j = 0; j < len; j++) f[j] = (i * 7 + j) & 0xff;
  return f;
}

describe('EchoBot', () => {
  it('returns every byte in order after the delay, across growth of its slots in number and length', () => {
    const loop = new PacingLoop(2);
    const sink = new Collect();
    const bot = new EchoBot(sink, loop, 200);
    // Sizes up to 2 KB in no order: longer frames and more of them held re-lay the slots, frames kept.
    const sent: Uint8Array[] = [];
    let dueNext = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 300; i++) {
      const f = frame(i, 2 + ((i * 131) % 2000));
      sent.push(f);
      bot.audio(f);
      // Nothing is due before the delay has passed.
      dueNext = bot.service(performance.now());
      if (i % 3 === 2) {
        // Release what has been held: everything due by 1 s from now.
        bot.service(performance.now() + 1_000);
      }
    }
    expect(dueNext).toBeGreaterThan(performance.now());
    bot.service(performance.now() + 1_000);
    expect(sink.frames.length).toBe(sent.length);
    for (let i = 0; i < sent.length; i++)
      expect(Buffer.from(sink.frames[i]!).equals(Buffer.from(sent[i]!))).toBe(true);
    bot.end();
    loop.stop();
  });

  it('holds frames until their time, then hands them on', () => {
    const loop = new PacingLoop(2);
    const sink = new Collect();
    const bot = new EchoBot(sink, loop, 200);
    const t = performance.now();
    bot.audio(frame(1, 640));
    expect(bot.service(t + 100)).toBeGreaterThanOrEqual(t + 200);
    expect(sink.frames.length).toBe(0);
    expect(bot.service(t + 10_000)).toBe(Number.POSITIVE_INFINITY);
    expect(sink.frames.length).toBe(1);
    bot.end();
    loop.stop();
  });

  it('holds the longest delay the config accepts at the highest bot rate without dropping', () => {
    const loop = new PacingLoop(2);
    const sink = new Collect();
    const bot = new EchoBot(sink, loop, 10_000);
    // 10 s of 48 kHz audio in 20 ms frames, all held at once (none is due before 10 s).
    for (let i = 0; i < 500; i++) bot.audio(frame(i, 1920));
    bot.service(performance.now() + 20_000);
    expect(sink.frames.length).toBe(500);
    bot.end();
    loop.stop();
  });

  it('one long frame among short ones drops nothing and comes back byte for byte', () => {
    const loop = new PacingLoop(2);
    const sink = new Collect();
    const bot = new EchoBot(sink, loop, 1_000);
    // A second of 16 kHz frames held at once, one of them 20 KB: it must not crowd the others out.
    const sent: Uint8Array[] = [];
    for (let i = 0; i < 60; i++) {
      const f = frame(i, i === 5 ? 20_000 : 640);
      sent.push(f);
      bot.audio(f);
    }
    bot.service(performance.now() + 5_000);
    expect(Buffer.concat(sink.frames).equals(Buffer.concat(sent))).toBe(true);
    bot.end();
    loop.stop();
  });

  it('is bounded: a stalled loop makes it drop new audio, not grow without limit', () => {
    const loop = new PacingLoop(2);
    const sink = new Collect();
    const bot = new EchoBot(sink, loop, 200);
    // 20 s of 48 kHz audio with nothing released: more than the delay plus 5 s the line may hold.
    for (let i = 0; i < 1000; i++) bot.audio(frame(i, 1920));
    bot.service(performance.now() + 10_000);
    const held = sink.frames.reduce((n, f) => n + f.length, 0);
    expect(held).toBeLessThanOrEqual(5.2 * 48_000 * 2);
    expect(held).toBeGreaterThanOrEqual(5 * 48_000 * 2);
    // The first frames are the ones kept: it drops what comes once full.
    expect(Buffer.from(sink.frames[0]!).equals(Buffer.from(frame(0, 1920)))).toBe(true);
    bot.end();
    loop.stop();
  });
});
