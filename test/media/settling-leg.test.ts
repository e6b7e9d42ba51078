/**
 * The leg that waits for its bot's formats (src/media/settling-leg.ts): what is pushed before `settle`
 * comes out after it, converted once at the formats settled, audio and markers in their order; past
 * HELD_MS the oldest audio goes, counted; a reset drops the held audio and keeps the markers; a close
 * lets nothing out. Real pipelines (inline and one worker), tones measured by SNR.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { steadyToneSnrDb } from '../../src/audio/tone.js';
import { HELD_MS, SettlingLeg } from '../../src/media/settling-leg.js';
import { createPipeline, type DspPipeline } from '../../src/pipeline/index.js';
import type { LegSpec } from '../../src/pipeline/types.js';
import { waitFor } from '../helpers/wait.js';
import { concat, decode, encode, LegLog, pcmOf, tone } from '../pipeline/helpers.js';

const ULAW8 = { codec: 'pcmu', rate: 8000 } as const;
const SLIN16 = { codec: 'slin', rate: 16000 } as const;
/** The session's guess: the caller's µ-law toward a PCM16 16 kHz bot. */
const GUESS: LegSpec = { from: ULAW8, to: SLIN16 };

let p: DspPipeline | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

/** `ms` of a µ-law 8 kHz tone of `hz`, in 20 ms chunks. */
function ulawChunks(hz: number, ms: number): Uint8Array[] {
  const pcm = tone(hz, 8000, ms * 8, 8000);
  const out: Uint8Array[] = [];
  for (let at = 0; at < pcm.length; at += 160) out.push(encode('pcmu', pcm.subarray(at, at + 160)));
  return out;
}

describe.each([0, 1])('a settling leg on a pipeline of %i workers', (workers) => {
  it('holds audio and markers until settled, then converts them once, in order, at the formats settled', async () => {
    p = createPipeline({ workers });
    const sink = new LegLog();
    const leg = new SettlingLeg(p, GUESS, sink);
    const chunks = ulawChunks(1000, 400);
    for (const [i, c] of chunks.entries()) {
      leg.push(c);
      if (i === 9) leg.marker(7);
    }
    leg.marker(8);
    expect(sink.order).toEqual([]);
    expect(leg.settled).toBe(false);
    expect(leg.heldBytes).toBe(3200);

    // The bot named PCM16 at 24 kHz: that, not the guess, is what comes out.
    leg.settle({ from: ULAW8, to: { codec: 'slin', rate: 24000 } });
    expect(leg.settled).toBe(true);
    expect(leg.spec.to.rate).toBe(24000);
    await waitFor(() => sink.order.includes('m8'), 2_000, 'the held markers');
    const pcm = pcmOf(concat(sink.chunks));
    // 400 ms at 24 kHz, less what the resampler still holds.
    expect(pcm.length).toBeGreaterThan(9400);
    expect(pcm.length).toBeLessThanOrEqual(9600);
    const snr = steadyToneSnrDb(pcm.subarray(480), 1000, 24000)!;
    expect(snr).toBeGreaterThanOrEqual(30);
    // Marker 7 after the first ten chunks' audio (200 ms, 4800 samples at 24 kHz), 8 after all of it.
    const at7 = sink.order.indexOf('m7');
    const before7 = sink.chunks.slice(0, sink.order.slice(0, at7).filter((o) => o === 'a').length);
    const samples7 = before7.reduce((n, c) => n + c.length / 2, 0);
    expect(samples7).toBeGreaterThan(4600);
    expect(samples7).toBeLessThanOrEqual(4800);
    expect(sink.order.at(-1)).toBe('m8');

    // After it, the pipeline leg itself.
    const after = sink.chunks.length;
    leg.push(ulawChunks(1000, 20)[0]!);
    await waitFor(() => sink.chunks.length > after, 2_000, 'audio after the settle');
    leg.close();
  });

  it('passes the held bytes as they are when the bot speaks the caller format', async () => {
    p = createPipeline({ workers });
    const sink = new LegLog();
    const leg = new SettlingLeg(p, GUESS, sink);
    const chunks = ulawChunks(440, 200);
    // From one buffer refilled for each chunk, as a provider's wire gives them: the leg keeps copies.
    const scratch = new Uint8Array(160);
    for (const c of chunks) {
      scratch.set(c);
      leg.push(scratch);
    }
    scratch.fill(0);
    leg.settle({ from: ULAW8, to: ULAW8 });
    await waitFor(() => sink.chunks.length === chunks.length, 2_000, 'the held audio');
    expect(Buffer.from(concat(sink.chunks))).toEqual(Buffer.from(concat(chunks)));
    leg.close();
  });
});

describe('a settling leg before it is settled', () => {
  it(`keeps the newest ${HELD_MS} ms of audio, counting each chunk it drops, and every marker`, async () => {
    p = createPipeline({ workers: 0 });
    const sink = new LegLog();
    let shed = 0;
    const leg = new SettlingLeg(p, GUESS, sink, { onShed: () => shed++ });
    // 1 s of 500 Hz, a marker, then HELD_MS of 1 kHz: the 500 Hz second is what goes.
    for (const c of ulawChunks(500, 1000)) leg.push(c);
    leg.marker(1);
    for (const c of ulawChunks(1000, HELD_MS)) leg.push(c);
    expect(shed).toBe(50);
    expect(leg.heldBytes).toBe(HELD_MS * 8);
    leg.settle({ from: ULAW8, to: ULAW8 });
    expect(sink.order[0]).toBe('m1');
    const heard = decode('pcmu', concat(sink.chunks));
    expect(heard.length).toBe(HELD_MS * 8);
    expect(steadyToneSnrDb(heard, 1000, 8000)!).toBeGreaterThanOrEqual(30);
    leg.close();
  });

  it('drops the held audio on a reset and keeps the markers; lets nothing out once closed', () => {
    p = createPipeline({ workers: 0 });
    const sink = new LegLog();
    const leg = new SettlingLeg(p, GUESS, sink);
    for (const c of ulawChunks(440, 100)) leg.push(c);
    leg.marker(3);
    leg.reset();
    expect(sink.resets).toEqual([true]);
    expect(leg.heldBytes).toBe(0);
    leg.push(ulawChunks(440, 20)[0]!);
    leg.settle({ from: ULAW8, to: ULAW8 });
    expect(sink.order).toEqual(['r', 'm3', 'a']);

    const closed = new LegLog();
    const gone = new SettlingLeg(p, GUESS, closed);
    gone.push(ulawChunks(440, 20)[0]!);
    gone.marker(1);
    gone.close();
    gone.settle({ from: ULAW8, to: ULAW8 });
    gone.push(ulawChunks(440, 20)[0]!);
    expect(closed.order).toEqual([]);
    expect(gone.settled).toBe(false);
  });

  it('refuses half a PCM16 sample as a leg does', () => {
    p = createPipeline({ workers: 0 });
    const leg = new SettlingLeg(p, { from: SLIN16, to: ULAW8 }, new LegLog());
    expect(() => leg.push(new Uint8Array(3))).toThrow(/even byte count/);
  });
});
