import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Codec } from '../../src/audio/format.js';
import { createMetrics } from '../../src/metrics.js';
import { createPipeline, type DspPipeline } from '../../src/pipeline/index.js';
import { captureLog } from '../helpers/log-capture.js';
import { quietFor, waitFor } from '../helpers/wait.js';
import {
  asBytes,
  type CallLegs,
  type CallSpec,
  Collector,
  concat,
  decode,
  encode,
  LegLog,
  openCall,
  pcmOf,
  reference,
  tick,
  tone,
  toneSnrDb,
} from './helpers.js';

const open: DspPipeline[] = [];
function pipeline(workers: number): DspPipeline {
  const p = createPipeline({ workers });
  open.push(p);
  return p;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((p) => p.close()));
});

function spec(inCodec: Codec, inRate: number, outCodec: Codec, outRate: number, botRate: number) {
  return {
    callerIn: { codec: inCodec, sampleRate: inRate },
    callerOut: { codec: outCodec, sampleRate: outRate },
    botRate,
  } satisfies CallSpec;
}

/** Splits `pcm` into chunks of `sizes` samples, cycling through the sizes. */
function chunks(pcm: Int16Array, sizes: readonly number[]): Int16Array[] {
  const out: Int16Array[] = [];
  for (let at = 0, k = 0; at < pcm.length; k++) {
    const n = Math.min(sizes[k % sizes.length]!, pcm.length - at);
    out.push(pcm.slice(at, at + n));
    at += n;
  }
  return out;
}

/** Deterministic speech-like signal: tones plus noise from a fixed LCG. */
function signal(rate: number, n: number, seed: number): Int16Array {
  const out = new Int16Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const t = i / rate;
    const v =
      6000 * Math.sin(2 * Math.PI * (200 + seed) * t) +
      3000 * Math.sin(2 * Math.PI * 1700 * t) +
      ((s >>> 16) - 32768) / 16;
    out[i] = Math.round(v);
  }
  return out;
}

describe.each([0, 2])('pipeline with %i workers', (workers) => {
  // One pipeline for the whole block (worker start-up under tsx is most of a test's time); every test
  // opens its own sessions, so they do not see each other's audio.
  let shared: DspPipeline | undefined;
  const sharedPipeline = (): DspPipeline => {
    shared ??= createPipeline({ workers });
    return shared;
  };
  afterAll(async () => {
    await shared?.close();
  });

  it('carries a tone caller -> bot (8k slin -> 16k) at high SNR, and through µ-law at G.711 SNR', async () => {
    const p = sharedPipeline();
    const slin = new Collector();
    const ulaw = new Collector();
    const a = openCall(p, spec('slin', 8000, 'slin', 8000, 16000), slin);
    const b = openCall(p, spec('pcmu', 8000, 'pcmu', 8000, 16000), ulaw);
    const pcm = tone(1000, 8000, 8000, 12000);
    for (const c of chunks(pcm, [160])) {
      a.fromCaller(asBytes(c));
      b.fromCaller(encode('pcmu', c));
    }
    await waitFor(
      () => slin.bot.length === 50 && ulaw.bot.length === 50,
      10_000,
      'slin.bot.length === 50 && ulaw.bot.length === 50',
    );
    const out = pcmOf(concat(slin.bot));
    expect(out.length).toBe(16000);
    expect(toneSnrDb(out, 1000, 16000, 160)).toBeGreaterThan(70);
    const outU = pcmOf(concat(ulaw.bot));
    const snrU = toneSnrDb(outU, 1000, 16000, 160);
    expect(snrU).toBeGreaterThan(33);
    expect(snrU).toBeLessThan(45);
  });

  it('carries a tone bot -> caller (16k -> 8k A-law) at G.711 SNR', async () => {
    const p = sharedPipeline();
    const sink = new Collector();
    const s = openCall(p, spec('slin', 8000, 'pcma', 8000, 16000), sink);
    for (const c of chunks(tone(700, 16000, 16000, 12000), [320])) s.fromBot(asBytes(c));
    await waitFor(() => sink.caller.length === 50, 10_000, 'sink.caller.length === 50');
    const out = decode('pcma', concat(sink.caller));
    expect(out.length).toBe(8000);
    expect(toneSnrDb(out, 700, 8000, 80)).toBeGreaterThan(33);
  });

  it('gives exact sample counts at any whole-sample chunking', async () => {
    const p = sharedPipeline();
    const cases = [
      { spec: spec('slin', 8000, 'slin', 8000, 16000), inSamples: 8000, sizes: [160, 7, 333, 1, 80] },
      { spec: spec('pcmu', 8000, 'pcma', 16000, 24000), inSamples: 8000, sizes: [160, 13] },
      { spec: spec('slin', 16000, 'pcmu', 8000, 48000), inSamples: 16000, sizes: [320, 5, 640] },
    ];
    const sinks = cases.map(() => new Collector());
    const sessions = cases.map((c, i) => openCall(p, c.spec, sinks[i]!));
    cases.forEach((c, i) => {
      const s = sessions[i]!;
      const callerPcm = signal(c.spec.callerIn.sampleRate, c.inSamples, i + 1);
      const parts = chunks(callerPcm, c.sizes);
      for (const part of parts) s.fromCaller(encode(c.spec.callerIn.codec, part));
      // One second of bot audio at the bot's rate, in odd-sized pieces.
      const botPcm = signal(c.spec.botRate, c.spec.botRate, i + 7);
      const botParts = chunks(botPcm, [c.spec.botRate / 50, 3, 101]);
      for (const part of botParts) s.fromBot(asBytes(part));
    });
    // Waits for the samples, not the chunks: a chunk too short to give a whole output sample gives none.
    const samples = (parts: Uint8Array[], codec: Codec) =>
      concat(parts).byteLength / (codec === 'slin' ? 2 : 1);
    const arrived = () =>
      cases.every((c, i) => {
        const wantBot = Math.floor((c.inSamples * c.spec.botRate) / c.spec.callerIn.sampleRate);
        return (
          samples(sinks[i]!.bot, 'slin') >= wantBot &&
          samples(sinks[i]!.caller, c.spec.callerOut.codec) >= c.spec.callerOut.sampleRate
        );
      });
    await waitFor(arrived, 10_000, 'arrived');
    cases.forEach((c, i) => {
      const k = sinks[i]!;
      const botSamples = concat(k.bot).byteLength / 2;
      const wantBot = Math.floor((c.inSamples * c.spec.botRate) / c.spec.callerIn.sampleRate);
      expect(botSamples - wantBot, `case ${i} bot`).toBeGreaterThanOrEqual(0);
      expect(botSamples - wantBot, `case ${i} bot`).toBeLessThanOrEqual(1);
      const outCodec = c.spec.callerOut.codec;
      const callerSamples = concat(k.caller).byteLength / (outCodec === 'slin' ? 2 : 1);
      const wantCaller = c.spec.callerOut.sampleRate; // one second of bot audio in
      expect(callerSamples - wantCaller, `case ${i} caller`).toBeGreaterThanOrEqual(0);
      expect(callerSamples - wantCaller, `case ${i} caller`).toBeLessThanOrEqual(1);
    });
  });

  it('keeps per-leg order both ways across hundreds of calls under load', async () => {
    const p = sharedPipeline();
    const N = 300;
    const CHUNKS = 30;
    // µ-law 8 kHz caller, 8 kHz bot: a decode one way and an encode the other, no resampler, so each
    // chunk's stamp (call, sequence) comes back exactly (µ-law decode then encode is lossless).
    const sinks = Array.from({ length: N }, () => new Collector());
    const calls = sinks.map((k) => openCall(p, spec('pcmu', 8000, 'pcmu', 8000, 8000), k));
    // Codes below 0x7f only: 0x7f and 0xff are µ-law's two zeros, and an encode gives back 0xff for both.
    const stamp = (i: number, seq: number, base: number) => {
      const b = new Uint8Array(160).fill(base + seq);
      b[1] = i % 120;
      b[2] = Math.floor(i / 120);
      return b;
    };
    for (let seq = 0; seq < CHUNKS; seq++) {
      for (let i = 0; i < N; i++) {
        calls[i]!.fromCaller(stamp(i, seq, 0));
        calls[i]!.fromBot(asBytes(decode('pcmu', stamp(i, seq, 40))));
        // Yield at irregular points so batches split mid-tick and mid-call.
        if ((i * 7 + seq) % 97 === 0) await tick();
      }
    }
    const total = () => sinks.reduce((n, k) => n + k.bot.length + k.caller.length, 0);
    await waitFor(() => total() === N * CHUNKS * 2, 10_000, 'total() === N * CHUNKS * 2');
    sinks.forEach((k, i) => {
      const want = (base: number) => Array.from({ length: CHUNKS }, (_, seq) => stamp(i, seq, base));
      expect(k.bot.map((b) => Array.from(pcmOf(b)))).toEqual(
        want(0).map((x) => Array.from(decode('pcmu', x))),
      );
      expect(k.caller.map((b) => Array.from(b))).toEqual(want(40).map((x) => Array.from(x)));
    });
  });

  it('refuses a spec it cannot run when the session opens, naming the field', () => {
    const p = sharedPipeline();
    expect(() => openCall(p, spec('slin', 11025, 'slin', 8000, 16000), new Collector())).toThrow(
      /from.rate must be 8000, 16000, 22050, 24000, 44100, 48000, got 11025/,
    );
    expect(() => openCall(p, spec('slin', 8000, 'gsm' as Codec, 8000, 16000), new Collector())).toThrow(
      /to.codec/,
    );
    expect(() => openCall(p, spec('slin', 8000, 'slin', 8000, 12345), new Collector())).toThrow(/to.rate/);
  });

  it('refuses half a PCM16 sample synchronously', async () => {
    const p = sharedPipeline();
    const sink = new Collector();
    const s = openCall(p, spec('slin', 8000, 'pcmu', 8000, 16000), sink);
    expect(() => s.fromCaller(new Uint8Array(321))).toThrow(/even byte count/);
    expect(() => s.fromBot(new Uint8Array(3))).toThrow(/even byte count/);
    // The leg goes on: the next whole chunk is taken, and only it comes out (20 ms at 16 kHz).
    s.fromCaller(new Uint8Array(320));
    await waitFor(() => sink.bot.length === 1, 10_000, 'the whole chunk at the bot');
    expect(sink.bot[0]!.byteLength).toBe(640);
  });

  it('keeps going for other sessions when a sink throws', async () => {
    const logged = captureLog();
    const p = createPipeline({ workers, log: logged.log });
    open.push(p);
    let threw = 0;
    const bad = new Collector();
    bad.up.audio = () => {
      threw++;
      throw new Error('sink bug');
    };
    const good = new Collector();
    const s = spec('slin', 8000, 'slin', 8000, 16000);
    const a = openCall(p, s, bad);
    const b = openCall(p, s, good);
    // A tone each, sent interleaved so the throws fall among the other session's audio.
    const parts = chunks(tone(440, 8000, 480, 9000), [160]).map(asBytes);
    for (const part of parts) {
      a.fromCaller(part);
      b.fromCaller(part);
    }
    await waitFor(() => good.bot.length === 3 && threw >= 1, 10_000, 'three chunks at the good sink');
    // The bad sink was called and threw; each throw was logged, not thrown back at the pusher.
    expect(logged.find(/^pipeline sink threw$/)).toHaveLength(threw);
    expect(logged.find(/^pipeline sink threw$/)[0]).toMatchObject({ err: { message: 'sink bug' } });
    // The other session's audio is whole and the same as a session of its own would give.
    expect(Buffer.from(concat(good.bot)).equals(Buffer.from(reference(s, parts, []).bot))).toBe(true);
  });

  it('counts DSP time into metrics, and refuses sessions once closed', async () => {
    const metrics = createMetrics();
    const p = createPipeline({ workers, metrics });
    const sink = new Collector();
    const s = openCall(p, spec('pcmu', 8000, 'pcmu', 8000, 16000), sink);
    for (let i = 0; i < 20; i++) s.fromCaller(new Uint8Array(160));
    await waitFor(() => sink.bot.length === 20, 10_000, 'sink.bot.length === 20');
    await p.close();
    const seconds = (await metrics.dspSeconds.get()).values[0]?.value ?? 0;
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan(1);
    expect(() => openCall(p, spec('pcmu', 8000, 'pcmu', 8000, 16000), sink)).toThrow(/closed/);
  });

  it('calls no sink after a session is closed', async () => {
    const p = sharedPipeline();
    const closed = new Collector();
    const live = new Collector();
    const a = openCall(p, spec('slin', 8000, 'slin', 8000, 16000), closed);
    const b = openCall(p, spec('slin', 8000, 'slin', 8000, 16000), live);
    if (workers > 0) {
      a.fromCaller(new Uint8Array(320));
      a.close();
    } else {
      a.close();
      a.fromCaller(new Uint8Array(320));
    }
    b.fromCaller(new Uint8Array(320));
    await waitFor(() => live.bot.length === 1, 10_000, 'live.bot.length === 1');
    await quietFor(20, 'no output from the closed leg');
    expect(closed.bot.length).toBe(0);
  });
});

describe('inline and worker modes', () => {
  it('give identical bytes, equal to the codec and resampler applied directly', async () => {
    const specs = [
      spec('slin', 8000, 'slin', 8000, 16000),
      spec('pcmu', 8000, 'pcmu', 8000, 16000),
      spec('pcma', 8000, 'pcma', 8000, 16000),
      spec('slin', 16000, 'pcmu', 8000, 24000),
      spec('pcmu', 8000, 'slin', 16000, 48000),
      spec('slin', 16000, 'slin', 16000, 16000),
      spec('pcma', 16000, 'pcma', 16000, 22050),
    ];
    const sessionsPer = 3;
    type Run = { sinks: Collector[]; sessions: CallLegs[] };
    const runs: Run[] = [0, 2].map((w) => {
      const p = pipeline(w);
      const sinks: Collector[] = [];
      const sessions: CallLegs[] = [];
      for (let r = 0; r < sessionsPer; r++) {
        for (const sp of specs) {
          const k = new Collector();
          sinks.push(k);
          sessions.push(openCall(p, sp, k));
        }
      }
      return { sinks, sessions };
    });
    const inputs = runs[0]!.sessions.map((_, i) => {
      const sp = specs[i % specs.length]!;
      const caller = chunks(signal(sp.callerIn.sampleRate, sp.callerIn.sampleRate / 2, i + 3), [
        sp.callerIn.sampleRate / 50,
        sp.callerIn.sampleRate / 100,
        37,
      ]).map((c) => encode(sp.callerIn.codec, c));
      const bot = chunks(signal(sp.botRate, sp.botRate / 2, i + 11), [sp.botRate / 50, 41]).map(asBytes);
      return { sp, caller, bot };
    });
    for (const run of runs) {
      // Interleave sessions chunk by chunk, as live calls do.
      const most = Math.max(...inputs.map((x) => Math.max(x.caller.length, x.bot.length)));
      for (let c = 0; c < most; c++) {
        inputs.forEach((x, i) => {
          const s = run.sessions[i]!;
          const a = x.caller[c];
          const b = x.bot[c];
          if (a !== undefined) s.fromCaller(a);
          if (b !== undefined) s.fromBot(b);
        });
        if (c % 5 === 0) await tick();
      }
    }
    const want = inputs.reduce((n, x) => n + x.caller.length + x.bot.length, 0);
    const got = (run: Run) => run.sinks.reduce((n, k) => n + k.bot.length + k.caller.length, 0);
    await waitFor(() => runs.every((r) => got(r) === want), 10_000, 'every chunk out of both runs');
    expect(runs.map(got), 'chunks out of [inline, workers]').toEqual([want, want]);
    inputs.forEach((x, i) => {
      const ref = reference(x.sp, x.caller, x.bot);
      for (const run of runs) {
        const k = run.sinks[i]!;
        expect(Buffer.from(concat(k.bot)).equals(Buffer.from(ref.bot)), `session ${i} bot`).toBe(true);
        expect(Buffer.from(concat(k.caller)).equals(Buffer.from(ref.caller)), `session ${i} caller`).toBe(
          true,
        );
      }
    });
  });
});

describe('worker pipeline lifecycle', () => {
  it('assigns legs to the least-loaded worker', () => {
    const p = pipeline(2);
    const leg = () =>
      p.open({ from: { codec: 'slin', rate: 8000 }, to: { codec: 'slin', rate: 16000 } }, new LegLog());
    const s = Array.from({ length: 5 }, leg);
    expect(p.stats().perWorker).toEqual([3, 2]);
    s[0]!.close();
    s[2]!.close();
    expect(p.stats().perWorker).toEqual([1, 2]);
    leg();
    expect(p.stats().perWorker).toEqual([2, 2]);
  });

  it('runs no DSP for a leg whose two ends are the same format, in either mode', () => {
    for (const p of [pipeline(0), pipeline(1)]) {
      const log = new LegLog();
      const same = { codec: 'pcmu', rate: 8000 } as const;
      const leg = p.open({ from: same, to: same }, log);
      const chunk = new Uint8Array(160).fill(7);
      leg.push(chunk);
      leg.marker(5);
      // Synchronous, and the very bytes pushed: no worker, no copy, nothing counted as DSP state.
      expect(log.order).toEqual(['a', 'm5']);
      expect(Array.from(log.chunks[0]!)).toEqual(Array.from(chunk));
      expect(p.workerOf(leg)).toBe(-1);
      expect(p.stats().legs).toBe(0);
    }
  });

  it('carries batches in a few reused shared pages, not a new buffer per batch', async () => {
    const p = pipeline(1);
    const buffers = new Set<ArrayBufferLike>();
    let outputs = 0;
    const sink = new LegLog();
    sink.audio = (view: Uint8Array) => {
      buffers.add(view.buffer);
      outputs++;
    };
    const s = openCall(p, spec('slin', 8000, 'pcmu', 8000, 16000), new Collector());
    const up = p.open({ from: { codec: 'slin', rate: 8000 }, to: { codec: 'slin', rate: 16000 } }, sink);
    const down = p.open({ from: { codec: 'slin', rate: 16000 }, to: { codec: 'pcmu', rate: 8000 } }, sink, {
      near: up,
    });
    s.close();
    const caller = asBytes(tone(440, 8000, 160, 8000));
    const bot = asBytes(tone(440, 16000, 320, 8000));
    // 300 event-loop turns, each its own batch (some wait behind two in flight and merge).
    for (let i = 0; i < 300; i++) {
      up.push(caller);
      down.push(bot);
      await new Promise((r) => setImmediate(r));
    }
    await waitFor(() => outputs === 600, 10_000, 'outputs === 600');
    // The sinks get views of one scratch the replies' audio is copied into (no view of a page per chunk).
    expect(buffers.size).toBe(1);
  });

  it('inline: a sink that feeds the pipeline again inside its call does not overwrite what it holds', () => {
    const p = pipeline(0);
    let inner = 0;
    let intact = false;
    const down = p.open(
      { from: { codec: 'slin', rate: 16000 }, to: { codec: 'slin', rate: 8000 } },
      new LegLog(),
    );
    down.push = ((orig) => (d: Uint8Array) => {
      inner++;
      orig(d);
    })(down.push.bind(down));
    const sink = new LegLog();
    sink.audio = (pcm: Uint8Array) => {
      const before = pcm.slice();
      // A bot that answers at once: its audio goes through the same pipeline while `pcm` is held.
      down.push(asBytes(tone(1000, 16000, 320, 12000)));
      intact = pcm.every((v, i) => v === before[i]);
    };
    const up = p.open({ from: { codec: 'slin', rate: 8000 }, to: { codec: 'slin', rate: 16000 } }, sink);
    up.push(asBytes(tone(440, 8000, 160, 8000)));
    expect(inner).toBe(1);
    expect(intact).toBe(true);
  });

  it('close() terminates the workers and leaves no handles behind', async () => {
    const count = (type: string) => process.getActiveResourcesInfo().filter((r) => r === type).length;
    const ports = count('MessagePort');
    const timers = count('Timeout');
    const p = createPipeline({ workers: 2 });
    const sink = new Collector();
    const s = openCall(p, spec('pcmu', 8000, 'pcmu', 8000, 16000), sink);
    s.fromCaller(new Uint8Array(160));
    await waitFor(() => sink.bot.length === 1, 10_000, 'sink.bot.length === 1');
    expect(count('MessagePort')).toBe(ports + 2);
    await p.close();
    expect(count('MessagePort')).toBe(ports);
    expect(count('Timeout')).toBeLessThanOrEqual(timers);
  });

  it('lets a process exit on its own after close(), with sessions still open', async () => {
    const { spawn } = await import('node:child_process');
    const fixture = new URL('./exit-fixture.ts', import.meta.url);
    const child = spawn(process.execPath, ['--import', 'tsx', fixture.pathname], { stdio: 'pipe' });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(-1);
      }, 20_000);
      child.on('exit', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    expect(out).toContain('fixture: processed 2 chunks');
    expect(code, out).toBe(0);
  });
});
