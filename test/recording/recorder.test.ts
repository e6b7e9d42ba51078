import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import wavefile from 'wavefile';
import { StereoAligner } from '../../src/recording/align.js';
import { Recordings } from '../../src/recording/index.js';
import { CallRecorder } from '../../src/recording/recorder.js';
import { type RecordingMeta, RecordingStore } from '../../src/recording/store.js';
import { emptyStereoHeader, StereoWavFile, type WavFs } from '../../src/recording/wav-file.js';
import { captureLog } from '../helpers/log-capture.js';
import { tone } from '../helpers/signal.js';
import { waitFor } from '../helpers/wait.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'vb-rec-'));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function readStereo(path: string) {
  const wav = new wavefile.WaveFile(readFileSync(path));
  const fmt = wav.fmt as { numChannels: number; sampleRate: number; bitsPerSample: number };
  const [left, right] = wav.getSamples(false, Int16Array) as unknown as Int16Array[];
  return { fmt, left: left!, right: right!, dataBytes: (wav.data as { chunkSize: number }).chunkSize };
}

function recordings(dir: string, fs?: WavFs) {
  const cap = captureLog();
  const registry = new Registry();
  const r = new Recordings({
    dir,
    recordAll: false,
    retentionDays: 30,
    log: cap.log,
    registry,
    ...(fs === undefined ? {} : { fs }),
  });
  return { r, cap, registry };
}

/** A clock the test moves: ms on a monotonic scale. */
function manualClock() {
  let t = 1000;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

describe('the stereo WAV writer', () => {
  it('writes the caller left and the bot right at the caller rate, the header valid and sized, duration exact', async () => {
    const dir = tempDir();
    const clock = manualClock();
    const rate = 16000;
    const store = new RecordingStore(dir);
    const failures = new Counter({ name: 'f', help: 'f', labelNames: ['code'] as const, registers: [] });
    const caller = tone(rate, 440, rate * 2, 8000);
    const bot = tone(rate, 1000, rate, 6000);
    const c = new CallRecorder(
      {
        recording_id: 'rec_0123456789abcdef0123456789abcdef',
        session_id: 's2',
        tenant: 'acme',
        started_at: '2026-01-01T00:00:01.000Z',
        rate,
      },
      { store, log: captureLog().log, failures, now: clock.now },
    );
    // 2 s of caller audio in 20 ms chunks, each arriving as it ends; the bot answers 1 s of tone from 0.5 s.
    const chunk = rate / 50;
    for (let k = 0; k < 100; k++) {
      clock.advance(20);
      c.caller(caller.subarray(k * chunk, (k + 1) * chunk));
      if (k >= 25 && k < 75) c.bot(bot.subarray((k - 25) * chunk, (k - 24) * chunk));
    }
    const meta = await c.stop();
    const path = store.wavPath('acme', meta.recording_id);
    const { fmt, left, right, dataBytes } = readStereo(path);
    expect(fmt).toMatchObject({ numChannels: 2, sampleRate: rate, bitsPerSample: 16 });
    expect(left.length).toBe(rate * 2);
    expect(dataBytes).toBe(rate * 2 * 4);
    expect(Array.from(left)).toEqual(Array.from(caller));
    // The bot's second arrives 0.5 s in: silence before, the tone sample for sample, silence after.
    const at = rate / 2;
    expect(right.subarray(0, at).every((v) => v === 0)).toBe(true);
    expect(Array.from(right.subarray(at, at + rate))).toEqual(Array.from(bot));
    expect(right.subarray(at + rate).every((v) => v === 0)).toBe(true);
    expect(meta).toMatchObject({
      session_id: 's2',
      tenant: 'acme',
      sample_rate: rate,
      channels: 2,
      duration_ms: 2000,
      bytes: statSync(path).size,
      in_progress: false,
    });
    expect(meta.failed).toBeUndefined();
    const sidecar = JSON.parse(readFileSync(path.replace(/\.wav$/, '.json'), 'utf8'));
    expect(sidecar).toEqual(meta);
  });

  it('reports duration_ms of the audio in the file, not of the call, for an odd frame count', async () => {
    const dir = tempDir();
    const { r } = recordings(dir);
    const rec = r.start(
      { session_id: 's', tenant: 't', started_at: new Date().toISOString(), rate: 8000 },
      captureLog().log,
    );
    await waitFor(
      async () => (await r.list('t')).length === 1,
      5000,
      'the sidecar of the recording in progress',
    );
    expect((await r.list('t'))[0]).toMatchObject({ in_progress: true, session_id: 's' });
    rec.caller(tone(8000, 300, 8003, 1000));
    const meta = await rec.stop();
    expect(meta.duration_ms).toBe(Math.round((8003 * 1000) / 8000));
    expect(readStereo(r.store.wavPath('t', meta.recording_id)).left.length).toBe(8003);
    expect(await r.list('t')).toEqual([meta]);
  });

  it('stops a recording the disk refuses with one error line and a metric; the audio calls never throw', async () => {
    const dir = tempDir();
    let writes = 0;
    const failing: WavFs = {
      async open(path) {
        const { open } = await import('node:fs/promises');
        const h = await open(path, 'wx');
        return {
          write: (async (...args: Parameters<typeof h.write>) => {
            writes++;
            if (writes > 2)
              throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
            return h.write(...args);
          }) as typeof h.write,
          close: () => h.close(),
        };
      },
    };
    const { r, cap, registry } = recordings(dir, failing);
    const log = captureLog();
    const rec = r.start(
      { session_id: 's', tenant: 't', started_at: new Date().toISOString(), rate: 16000 },
      log.log,
    );
    const pcm = tone(16000, 440, 320, 5000);
    // 10 s of audio, far past the two writes the disk takes (32 KiB blocks: ~0.5 s each).
    for (let k = 0; k < 500; k++) {
      rec.caller(pcm);
      rec.bot(pcm);
      // A real call gives the disk 20 ms between chunks; a block (~0.5 s) at a time is enough here.
      if (k % 25 === 24) await waitFor(() => writes >= (k + 1) / 25 || writes > 2, 5000, 'a write');
    }
    await waitFor(() => log.find(/recording stopped/).length > 0, 5000, 'the failure to be logged');
    for (let k = 0; k < 100; k++) rec.caller(pcm);
    const meta = await rec.stop();
    expect(log.find(/recording stopped/)).toHaveLength(1);
    expect(log.lines.filter((l) => l.level === 50)).toHaveLength(1);
    expect(log.find(/recording stopped/)[0]).toMatchObject({ code: 'ENOSPC' });
    expect(meta.failed).toBe('ENOSPC');
    expect(await registry.getSingleMetricAsString('voicebridge_recording_failures_total')).toContain(
      'voicebridge_recording_failures_total{code="ENOSPC"} 1',
    );
    expect(cap.lines.filter((l) => l.level === 50)).toHaveLength(0);
  });

  it('stops with ENOTDIR when RECORDINGS_DIR is a file, and the recorder keeps taking audio', async () => {
    const base = tempDir();
    const file = join(base, 'not-a-dir');
    writeFileSync(file, 'x');
    const { r, registry } = recordings(file);
    const log = captureLog();
    const rec = r.start(
      { session_id: 's', tenant: 't', started_at: new Date().toISOString(), rate: 8000 },
      log.log,
    );
    for (let k = 0; k < 50; k++) rec.caller(tone(8000, 440, 160, 5000));
    const meta = await rec.stop();
    expect(meta.failed).toBe('ENOTDIR');
    expect(log.find(/recording stopped/)).toHaveLength(1);
    expect(await registry.getSingleMetricAsString('voicebridge_recording_failures_total')).toContain(
      'code="ENOTDIR"} 1',
    );
  });
});

describe('a removed directory', () => {
  it('a recording whose folder is removed mid-call logs one error at the end; the audio calls never throw', async () => {
    const dir = tempDir();
    const { r, registry } = recordings(dir);
    const log = captureLog();
    const rec = r.start(
      { session_id: 's', tenant: 't', started_at: new Date().toISOString(), rate: 8000 },
      log.log,
    );
    await waitFor(async () => (await r.list('t')).length === 1, 5000, 'the recording to start');
    rmSync(dir, { recursive: true, force: true });
    for (let k = 0; k < 200; k++) rec.caller(tone(8000, 440, 160, 5000));
    const meta = await rec.stop();
    expect(meta.failed).toBe('ENOENT');
    expect(log.find(/recording stopped/)).toHaveLength(1);
    expect(log.lines.filter((l) => l.level === 50)).toHaveLength(1);
    expect(await registry.getSingleMetricAsString('voicebridge_recording_failures_total')).toContain(
      'code="ENOENT"} 1',
    );
  });
});

describe('the size limit', () => {
  it('stops a file at the most a WAV header can state (EFBIG), everything before it written and sized', async () => {
    const dir = tempDir();
    const path = join(dir, 'full.wav');
    const failures: string[] = [];
    const file = new StereoWavFile({ path, rate: 8000, blockBytes: 1024, maxDataBytes: 4002 }, (f) =>
      failures.push(f.code),
    );
    const frames = new Int16Array(2 * 3000);
    for (let i = 0; i < frames.length; i++) frames[i] = i;
    file.write(frames.subarray(0, 1000));
    file.write(frames.subarray(1000));
    file.write(frames);
    await file.close();
    expect(failures).toEqual(['EFBIG']);
    expect(file.dataBytes).toBe(4000);
    const wav = readStereo(path);
    expect(wav.dataBytes).toBe(4000);
    expect(Array.from(wav.left)).toEqual(Array.from({ length: 1000 }, (_, i) => 2 * i));
    expect(Array.from(wav.right)).toEqual(Array.from({ length: 1000 }, (_, i) => 2 * i + 1));
  });
});

describe('alignment', () => {
  it('holds no more than its capacity when one leg runs far ahead, writing the other as silence', () => {
    const frames: number[] = [];
    const a = new StereoAligner({ capacityFrames: 1000, toleranceFrames: [400, 100] }, (f) =>
      frames.push(f.length / 2),
    );
    a.push(1, new Int16Array(5000).fill(7), 0);
    expect(a.written).toBeGreaterThanOrEqual(4000);
    a.finish();
    expect(a.written).toBe(5000);
  });

  it('keeps continuous audio continuous within the tolerance, and starts a leg after silence where the clock says', () => {
    const out: number[] = [];
    const a = new StereoAligner({ capacityFrames: 4000, toleranceFrames: [400, 100] }, (f) => {
      for (let i = 0; i < f.length; i += 2) out.push(f[i]!);
    });
    // Caller chunks of 160, the third 300 frames late (a stall within the tolerance), then on time again.
    a.push(0, new Int16Array(160).fill(1), 160);
    a.push(0, new Int16Array(160).fill(2), 320);
    a.push(0, new Int16Array(160).fill(3), 780);
    a.push(0, new Int16Array(160).fill(4), 800);
    // Then nothing for 1000 frames (past the tolerance): the next chunk ends at the clock.
    a.push(0, new Int16Array(160).fill(5), 2000);
    a.finish();
    expect(out.slice(0, 640)).toEqual([
      ...new Array(160).fill(1),
      ...new Array(160).fill(2),
      ...new Array(160).fill(3),
      ...new Array(160).fill(4),
    ]);
    expect(out.length).toBe(2000);
    expect(out.slice(640, 1840).every((v) => v === 0)).toBe(true);
    expect(out.slice(1840).every((v) => v === 5)).toBe(true);
  });
});

describe('retention', () => {
  it('removes recordings last written before the retention period, keeps the rest', async () => {
    const dir = tempDir();
    const { r } = recordings(dir);
    const metas: RecordingMeta[] = [];
    for (let i = 0; i < 3; i++) {
      const rec = r.start(
        { session_id: `s${i}`, tenant: 't', started_at: new Date().toISOString(), rate: 8000 },
        captureLog().log,
      );
      rec.caller(tone(8000, 440, 800, 1000));
      metas.push(await rec.stop());
    }
    const old = (Date.now() - 31 * 86_400_000) / 1000;
    for (const m of metas.slice(0, 2)) utimesSync(r.store.wavPath('t', m.recording_id), old, old);
    expect(await r.store.sweep(30 * 86_400_000)).toBe(2);
    expect((await r.list('t')).map((m) => m.recording_id)).toEqual([metas[2]!.recording_id]);
    expect(() => statSync(r.store.wavPath('t', metas[0]!.recording_id))).toThrow();
  });

  it('at start: finishes a recording a stopped instance left in progress, and removes expired ones', async () => {
    const dir = tempDir();
    const store = new RecordingStore(dir);
    await store.prepare('t');
    // A crash mid-call: the header as first written (sizes 0), 1 s of frames after it, the sidecar in progress.
    const left = tone(8000, 440, 8000, 3000);
    const frames = new Int16Array(16000);
    for (let i = 0; i < 8000; i++) frames[2 * i] = left[i]!;
    const id = 'rec_00000000000000000000000000000001';
    writeFileSync(
      store.wavPath('t', id),
      Buffer.concat([emptyStereoHeader(8000), Buffer.from(frames.buffer)]),
    );
    const base = { session_id: 's', tenant: 't', sample_rate: 8000, channels: 2 as const };
    await store.writeMeta({
      ...base,
      recording_id: id,
      started_at: new Date().toISOString(),
      duration_ms: 0,
      bytes: 44,
      in_progress: true,
    });
    const stale = (Date.now() - 20 * 60_000) / 1000;
    utimesSync(store.wavPath('t', id), stale, stale);
    // And one past retention.
    const oldId = 'rec_00000000000000000000000000000002';
    writeFileSync(store.wavPath('t', oldId), emptyStereoHeader(8000));
    await store.writeMeta({
      ...base,
      recording_id: oldId,
      started_at: '2020-01-01T00:00:00.000Z',
      duration_ms: 0,
      bytes: 44,
      in_progress: false,
    });
    const old = (Date.now() - 31 * 86_400_000) / 1000;
    utimesSync(store.wavPath('t', oldId), old, old);

    const { r } = recordings(dir);
    r.startRetention();
    await r.sweeping;
    await r.close();
    const listed = await r.list('t');
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      recording_id: id,
      in_progress: false,
      failed: 'interrupted',
      duration_ms: 1000,
      bytes: 44 + 32000,
    });
    const wav = readStereo(store.wavPath('t', id));
    expect(wav.dataBytes).toBe(32000);
    expect(Array.from(wav.left)).toEqual(Array.from(left));
  });
});
