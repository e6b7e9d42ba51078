/**
 * The residual gate (src/audio/denoise-gate.ts) frame by frame, on made-up sequences of RNNoise's voice
 * probability and the line's levels: it stays open on the caller's speech, closes to its depth on babble
 * that RNNoise half takes for speech, opens on the first frame of speech, holds for a hang as long as the
 * run of speech earned then falls at its release (to the sentence's depth first after a run of speech),
 * and starts afresh after reset. On recorded speech through RNNoise: test/audio/denoise.test.ts
 * and, through the bridge, test/media/denoise-bridge.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  GATE_DEPTH_DB,
  GATE_FIRST_MARGIN_DB,
  GATE_HANG_FRAMES,
  GATE_HANG_PER_FRAME,
  GATE_MARGIN_DB,
  GATE_RELEASE_DB,
  GATE_SPURT_DEPTH_DB,
  GATE_SPURT_FRAMES,
  GATE_SPURT_RUN,
  ResidualGate,
} from '../../src/audio/denoise-gate.js';
import { seeded } from '../helpers/noisy-speech.js';

const power = (db: number) => 10 ** (db / 10);
const db = (gain: number) => 20 * Math.log10(gain);

/** Babble on the line: its level wanders 45-51 dB, RNNoise's probability 0.3-0.95. */
function babbleFrame(r: () => number): [number, number] {
  return [0.3 + 0.65 * r(), power(45 + 6 * r())];
}

describe('the residual gate', () => {
  it('closes to its depth on babble RNNoise half takes for speech', () => {
    const gate = new ResidualGate();
    const r = seeded(3);
    const gains: number[] = [];
    for (let f = 0; f < 300; f++) gains.push(gate.next(...babbleFrame(r)));
    // After the first second, closed nearly all the time.
    const late = gains.slice(100);
    const closed = late.filter((g) => db(g) <= -GATE_DEPTH_DB + 0.01).length;
    expect(closed / late.length).toBeGreaterThan(0.9);
  });

  it('stays open on the caller speaking over the babble, and opens on the first frame of speech', () => {
    const gate = new ResidualGate();
    const r = seeded(4);
    for (let f = 0; f < 200; f++) gate.next(...babbleFrame(r));
    expect(db(gate.next(...babbleFrame(r)))).toBeLessThan(-GATE_DEPTH_DB + 0.01);
    // The caller: 10-20 dB above the babble, RNNoise sure of it.
    for (let f = 0; f < 300; f++) {
      const g = gate.next(0.95 + 0.05 * r(), power(60 + 10 * r()));
      if (g !== 1) expect.fail(`speech frame ${f} gated to ${db(g).toFixed(1)} dB`);
    }
  });

  it('holds a stray frame of speech open briefly, then falls at its release to its depth', () => {
    const gate = new ResidualGate();
    for (let f = 0; f < 100; f++) gate.next(0.1, power(40));
    expect(gate.next(1, power(70))).toBe(1);
    const after: number[] = [];
    for (let f = 0; f < GATE_HANG_PER_FRAME + 40; f++) after.push(db(gate.next(0.1, power(40))));
    for (let f = 0; f < GATE_HANG_PER_FRAME; f++) expect(after[f]).toBe(0);
    expect(after[GATE_HANG_PER_FRAME]).toBeCloseTo(-GATE_RELEASE_DB, 6);
    expect(after[GATE_HANG_PER_FRAME + 5]).toBeCloseTo(-6 * GATE_RELEASE_DB, 6);
    expect(after.at(-1)).toBeCloseTo(-GATE_DEPTH_DB, 6);
  });

  it('after a run of speech holds its full hang, keeps the sentence at its shallow depth, then closes', () => {
    const gate = new ResidualGate();
    for (let f = 0; f < 100; f++) gate.next(0.1, power(40));
    for (let f = 0; f < GATE_SPURT_RUN; f++) expect(gate.next(1, power(70))).toBe(1);
    const after: number[] = [];
    for (let f = 0; f < GATE_SPURT_FRAMES + 40; f++) after.push(db(gate.next(0.1, power(40))));
    for (let f = 0; f < GATE_HANG_FRAMES; f++) expect(after[f]).toBe(0);
    expect(after[GATE_HANG_FRAMES]).toBeCloseTo(-GATE_RELEASE_DB, 6);
    // Within the sentence's frames it rests at the shallow depth...
    expect(after[GATE_SPURT_FRAMES - 2]).toBeCloseTo(-GATE_SPURT_DEPTH_DB, 6);
    // ...and after them falls on to the full depth.
    expect(after[GATE_SPURT_FRAMES + 5]).toBeLessThan(-GATE_SPURT_DEPTH_DB - 4);
    expect(after.at(-1)).toBeCloseTo(-GATE_DEPTH_DB, 6);
  });

  it('asks more of a voice before the caller has first spoken, less once they have', () => {
    const between = (GATE_MARGIN_DB + GATE_FIRST_MARGIN_DB) / 2;
    const gate = new ResidualGate();
    for (let f = 0; f < 200; f++) gate.next(0.1, power(40));
    // A voice behind a caller who has not spoken: RNNoise sure of it, the line `between` dB up: not the caller.
    expect(db(gate.next(1, power(40 + between)))).toBeLessThan(-GATE_DEPTH_DB + 1.01);
    for (let f = 0; f < 100; f++) gate.next(0.1, power(40));
    // The caller's first words, well above the floor...
    for (let f = 0; f < GATE_SPURT_RUN; f++) expect(gate.next(1, power(60))).toBe(1);
    for (let f = 0; f < 300; f++) gate.next(0.1, power(40));
    expect(db(gate.next(0.1, power(40)))).toBeLessThan(-GATE_DEPTH_DB + 0.01);
    // ...and from then on a frame `between` dB up is theirs.
    expect(gate.next(1, power(40 + between))).toBe(1);
  });

  it('keeps a quiet talker in silence: sound far above digital silence is speech', () => {
    const gate = new ResidualGate();
    for (let f = 0; f < 100; f++) gate.next(0, 0);
    for (let f = 0; f < 50; f++) gate.next(0.01, power(2));
    for (let f = 0; f < 100; f++) expect(gate.next(0.92, power(30))).toBe(1);
  });

  it('starts afresh after reset', () => {
    const gate = new ResidualGate();
    const r = seeded(5);
    const first: number[] = [];
    for (let f = 0; f < 200; f++) first.push(gate.next(...babbleFrame(r)));
    gate.reset();
    const r2 = seeded(5);
    const again: number[] = [];
    for (let f = 0; f < 200; f++) again.push(gate.next(...babbleFrame(r2)));
    expect(again).toEqual(first);
  });
});
