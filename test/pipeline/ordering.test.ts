/**
 * Events never overtake audio, by construction: markers and resets ride a leg's own first-in-first-out
 * stream. Shown with a worker slowed to take longer over every batch than the test takes to send the next
 * (so audio is always in flight when a marker or a reset is pushed), in the pipeline and through a whole
 * bridge. Nothing here waits on a timer to keep order: the slow worker would break any such wait.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { DspPipeline } from '../../src/pipeline/index.js';
import { createPipeline } from '../../src/pipeline/index.js';
import type { Leg, LegSpec } from '../../src/pipeline/types.js';
import { tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge, type TestBridge } from '../helpers/bridge.js';
import { TestProvider } from '../helpers/provider.js';
import { waitFor } from '../helpers/wait.js';
import { decode, LegLog, tick } from './helpers.js';

/** µ-law in, PCM16 out, same rate: each chunk's fill byte comes back exactly, so a chunk shows who it is. */
const DECODE: LegSpec = { from: { codec: 'pcmu', rate: 8000 }, to: { codec: 'slin', rate: 8000 } };
const chunk = (code: number) => new Uint8Array(160).fill(code);
const decoded = (code: number) => decode('pcmu', new Uint8Array([code]))[0]!;

const pipelines: DspPipeline[] = [];
let bridge: TestBridge | undefined;
let bot: TestBot | undefined;
const providers: TestProvider[] = [];
afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await bridge?.close();
  bridge = undefined;
  await bot?.close();
  bot = undefined;
  await Promise.all(pipelines.splice(0).map((p) => p.close()));
});

function slowPipeline(workers: number): DspPipeline {
  const p = createPipeline({ workers });
  pipelines.push(p);
  if (workers > 0) p.injectWorkerFault(0, 'slow', 40);
  return p;
}

describe.each([0, 1])('a leg with %i workers (the worker slowed by 40 ms a batch)', (workers) => {
  it('hands every marker out after exactly the audio pushed before it, across many legs', async () => {
    const p = slowPipeline(workers);
    const logs = Array.from({ length: 20 }, () => new LegLog());
    const legs = logs.map((log) => p.open(DECODE, log));
    const want: string[][] = logs.map(() => []);
    // Each leg: bursts of 1-4 chunks with a marker after each, pushed over several event-loop turns.
    for (let round = 0; round < 12; round++) {
      legs.forEach((leg, i) => {
        const n = 1 + ((round + i) % 4);
        for (let c = 0; c < n; c++) {
          leg.push(chunk(round));
          want[i]!.push('a');
        }
        leg.marker(round * 100 + i);
        want[i]!.push(`m${round * 100 + i}`);
      });
      if (round % 3 === 0) await tick();
    }
    await waitFor(
      () => logs.every((l, i) => l.order.length === want[i]!.length),
      15_000,
      'logs.every((l, i) => l.order.length === want[i]!.length)',
    );
    for (const [i, l] of logs.entries()) expect(l.order, `leg ${i}`).toEqual(want[i]);
    // And the audio between markers is the audio pushed there.
    logs.forEach((l) => {
      let round = 0;
      let k = 0;
      for (const o of l.order) {
        if (o === 'a') expect(new Int16Array(l.chunks[k++]!.slice().buffer)[0]).toBe(decoded(round));
        else round++;
      }
    });
  });

  it('drops audio pushed before a reset that had not come out, and keeps the markers before it', async () => {
    const p = slowPipeline(workers);
    const log = new LegLog();
    const leg: Leg = p.open(DECODE, log);
    // Old audio, a marker, more old audio; then the reset, then new audio and a marker.
    for (let i = 0; i < 10; i++) leg.push(chunk(0x10));
    leg.marker(1);
    for (let i = 0; i < 10; i++) leg.push(chunk(0x10));
    leg.reset();
    for (let i = 0; i < 5; i++) leg.push(chunk(0x20));
    leg.marker(2);
    await waitFor(() => log.order.includes('m2'), 10_000, 'log.order.includes("m2")');
    const afterReset = log.order.slice(log.order.indexOf('r'));
    const chunksAfter = log.chunks.slice(
      log.order.slice(0, log.order.indexOf('r')).filter((o) => o === 'a').length,
    );
    // Nothing of the old audio after the reset; all of the new; the old marker still comes, in order.
    expect(chunksAfter.map((c) => new Int16Array(c.slice().buffer)[0])).toEqual(Array(5).fill(decoded(0x20)));
    expect(afterReset.filter((o) => o.startsWith('m'))).toEqual(workers > 0 ? ['m1', 'm2'] : ['m2']);
    expect(log.resets).toEqual([true]);
    if (workers > 0) {
      // With the worker slowed, the old audio was all still in it: none came out, before or after.
      expect(log.order.slice(0, log.order.indexOf('r'))).toEqual([]);
    }
  });
});

describe('a worker that dies with markers in flight', () => {
  it('hands them out right after the gap, in order, before anything pushed later', async () => {
    const p = createPipeline({ workers: 1 });
    pipelines.push(p);
    const log = new LegLog();
    const leg = p.open(DECODE, log);
    leg.push(chunk(1));
    leg.marker(1);
    leg.push(chunk(2));
    leg.marker(2);
    // The exit is in the same batch, after the markers: the worker runs them and dies before answering.
    p.injectWorkerFault(0, 'exit');
    await waitFor(() => log.gaps.length === 1, 10_000, 'log.gaps.length === 1');
    leg.push(chunk(3));
    leg.marker(3);
    await waitFor(() => log.order.includes('m3'), 10_000, 'log.order.includes("m3")');
    // Chunks 1 and 2 died with the worker; their markers did not. Chunk 3 came from the replacement.
    expect(log.order).toEqual(['m1', 'm2', 'a', 'm3']);
  });
});

describe('a whole bridge with DSP_WORKERS=1 and a slow worker', () => {
  it("keeps the bot's marks and digits behind its audio, and the caller's digits behind the caller's audio", async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ BOT_URL: bot.url, DSP_WORKERS: '1', PACE_LEAD_MS: '40' });
    (bridge.bridge.pipeline as DspPipeline).injectWorkerFault(0, 'slow', 60);
    const p = new TestProvider(bridge.mediaUrl, { token: await bridge.mediaToken() });
    providers.push(p);
    await p.start('order-1');
    const conn = await bot.waitConnection();
    // Bot -> caller: 200 ms of audio, a mark, 200 ms more, a digit and a mark, sent at once.
    conn.ws.send(tonePcm16(440, 16000, 3200));
    conn.send({ event: 'mark', name: 'a' });
    conn.ws.send(tonePcm16(440, 16000, 3200));
    conn.send({ event: 'dtmf', digit: '7' });
    conn.send({ event: 'mark', name: 'b' });
    await p.waitEvent('mark', 5_000, (e) => e.name === 'b');
    const bytesBefore = (kind: string, name?: string) => {
      const at = p.order.findIndex(
        (o) => o.kind === 'event' && o.event === kind && (name === undefined || o.name === name),
      );
      return p.order.slice(0, at).reduce((n, o) => n + (o.kind === 'audio' ? o.bytes : 0), 0);
    };
    // 200 ms at 8 kHz PCM16 is 3,200 bytes: each event after all the audio the bot sent before it.
    expect(bytesBefore('mark', 'a')).toBeGreaterThanOrEqual(3200);
    expect(bytesBefore('dtmf')).toBeGreaterThanOrEqual(6400);
    expect(bytesBefore('mark', 'b')).toBeGreaterThanOrEqual(6400);

    // Caller -> bot: 300 ms of audio then a digit, sent at once: the bot gets the digit after the audio.
    const callerAudio = tonePcm16(1000, 8000, 2400);
    for (let i = 0; i < 15; i++) p.sendRaw(callerAudio.subarray(i * 320, (i + 1) * 320));
    p.send({ event: 'dtmf', digit: '3' });
    const digit = await conn.waitEvent('dtmf', 5_000, (e) => e.digit === '3');
    // 300 ms at the bot's 16 kHz is 9,600 bytes (the resampler may hold back a few samples).
    expect(digit.audioBytesBefore as number).toBeGreaterThanOrEqual(9600 - 64);
    // And the provider's session_end reaches the bot after the caller audio before it.
    for (let i = 0; i < 15; i++) p.sendRaw(callerAudio.subarray(i * 320, (i + 1) * 320));
    p.send({ event: 'session_end' });
    const end = await conn.waitEvent('session_end', 5_000);
    expect(end.audioBytesBefore as number).toBeGreaterThanOrEqual(2 * 9600 - 64);
    await waitFor(() => p.closeCode !== undefined, 5_000, 'the provider socket to close');
    expect(p.closeCode).toBe(1000);
  });
});
