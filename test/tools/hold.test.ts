/**
 * Hold audio's timing on a manual clock (the pacing loop and the decision timer both on it): it starts
 * tool_hold_ms after a tool began, never runs more than one 20 ms frame ahead of real time, stops within
 * one frame of the bot's next audio (and resumes once that has played while the tool still runs), and
 * after the tool's output plays on 3 s unless the bot speaks. The built-in sound itself: quiet, and
 * silent at its loop seam.
 */
import { describe, expect, it } from 'vitest';
import { HOLD_PEAK, holdPattern } from '../../src/audio/hold-tone.js';
import type { CallerPort } from '../../src/media/bot/types.js';
import { PacingLoop } from '../../src/media/pacing-loop.js';
import { builtinHold, HOLD_TAIL_MS, HoldAudio } from '../../src/tools/hold.js';
import { ManualClock } from '../helpers/clock.js';

const FORMAT = { codec: 'slin', rate: 16_000 } as const;
const BYTES_PER_MS = 32;
const AFTER_MS = 1000;

function rig() {
  const clock = new ManualClock(0);
  const loop = new PacingLoop(1, clock);
  const pushes: { at: number; bytes: number }[] = [];
  const port: CallerPort = {
    audio: (pcm) => pushes.push({ at: clock.now(), bytes: pcm.length }),
    mark() {},
    dtmf() {},
    hangup() {},
    clear() {},
    failed() {},
  };
  const hold = new HoldAudio({ port, loop, clock, format: FORMAT, afterMs: AFTER_MS });
  hold.use(builtinHold(FORMAT));
  /** Audio pushed by `at`, in ms of the stream. */
  const pushedMs = (at = Number.POSITIVE_INFINITY) =>
    pushes.filter((p) => p.at <= at).reduce((s, p) => s + p.bytes, 0) / BYTES_PER_MS;
  /** Steps the clock 1 ms at a time, checking the lead after each step. */
  const run = (ms: number, lead: { max: number }) => {
    for (let i = 0; i < ms; i++) {
      clock.advance(1);
      lead.max = Math.max(lead.max, pushedMs() - playedSince(clock.now()));
    }
  };
  let started: number | undefined;
  const playedSince = (now: number) => {
    if (started === undefined && pushes.length > 0) started = pushes[0]!.at;
    return started === undefined ? 0 : now - started;
  };
  return { clock, hold, pushes, pushedMs, run, resetStart: () => (started = undefined) };
}

describe('hold audio', () => {
  it('starts after tool_hold_ms, one frame ahead at most, stops within one frame of the bot, tail of 3 s', () => {
    const r = rig();
    r.hold.toolStarted();
    const lead = { max: 0 };
    r.run(AFTER_MS - 1, lead);
    expect(r.pushes).toHaveLength(0);
    r.run(2000, lead);
    expect(r.pushes[0]!.at).toBe(AFTER_MS);
    // Played 2 s: what was pushed is 2 s and at most one frame more.
    expect(r.pushedMs()).toBeGreaterThanOrEqual(2000);
    expect(lead.max).toBeLessThanOrEqual(20);
    // The bot speaks (400 ms of audio from now): nothing more is pushed; what is queued is < one frame.
    const botAt = r.clock.now();
    const queued = r.pushedMs() - (botAt - AFTER_MS);
    expect(queued).toBeLessThanOrEqual(20);
    r.hold.botAudio(botAt + 400);
    const n = r.pushes.length;
    r.run(399, lead);
    expect(r.pushes).toHaveLength(n);
    // The tool still runs: hold audio resumes once the bot's audio has played.
    r.run(20, lead);
    expect(r.pushes.length).toBeGreaterThan(n);
    expect(r.pushes[n]!.at).toBe(botAt + 400);
    // The output: hold audio plays on HOLD_TAIL_MS, then stops.
    r.hold.toolFinished();
    const outAt = r.clock.now();
    r.run(HOLD_TAIL_MS + 100, lead);
    expect(r.pushes.at(-1)!.at).toBeLessThan(outAt + HOLD_TAIL_MS);
    expect(r.pushes.at(-1)!.at).toBeGreaterThan(outAt + HOLD_TAIL_MS - 25);
  });

  it('after the output, the bot speaking ends it at once; a tool done before tool_hold_ms plays nothing', () => {
    const r = rig();
    r.hold.toolStarted();
    r.clock.advance(AFTER_MS + 500);
    r.hold.toolFinished();
    r.clock.advance(300);
    const n = r.pushes.length;
    r.hold.botAudio(r.clock.now() + 200);
    r.clock.advance(100);
    // A barge-in on the bot's answer does not bring the hold audio back either.
    r.hold.botCleared();
    r.clock.advance(HOLD_TAIL_MS + 500);
    expect(r.pushes).toHaveLength(n);

    const quick = rig();
    quick.hold.toolStarted();
    quick.clock.advance(AFTER_MS - 10);
    quick.hold.toolFinished();
    quick.clock.advance(HOLD_TAIL_MS + 1000);
    expect(quick.pushes).toHaveLength(0);
  });

  it('the built-in sound is quiet and silent at its seam', () => {
    for (const rate of [8000, 16_000, 24_000]) {
      const p = holdPattern(rate);
      const peak = p.reduce((m, v) => Math.max(m, Math.abs(v)), 0) / 32767;
      expect(peak).toBeGreaterThan(HOLD_PEAK * 0.7);
      expect(peak).toBeLessThanOrEqual(HOLD_PEAK + 1e-3);
      expect(Math.abs(p[0]!)).toBe(0);
      expect(Math.abs(p.at(-1)!)).toBe(0);
    }
  });
});
