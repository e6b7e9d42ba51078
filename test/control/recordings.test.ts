/**
 * Recordings end to end: a real bridge, a real call through builtin:echo, the recording listed and
 * downloaded over real HTTP with real JWTs; scopes, tenants, ranges, deletion; a disk that refuses
 * the recording while the call goes on.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import wavefile from 'wavefile';
import { fitTone } from '../../src/audio/tone.js';
import { tonePcm16 } from '../helpers/audio.js';
import { call } from '../helpers/http-call.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

let rig: InProcessRig | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await rig?.close();
  rig = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'vb-recroutes-'));
  dirs.push(d);
  return d;
}

type Listed = {
  recording_id: string;
  session_id: string;
  in_progress: boolean;
  bytes: number;
  duration_ms: number;
  sample_rate: number;
  channels: number;
  started_at: string;
  failed?: string;
};

async function list(r: InProcessRig, token: string, query = ''): Promise<Listed[]> {
  const res = await call(r.http, 'GET', `/v1/recordings${query}`, { token });
  expect(res.status, res.text).toBe(200);
  return JSON.parse(res.text) as Listed[];
}

async function download(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

/** The first sample index where |x| passes `level`. */
function onset(x: Int16Array, level = 2000): number {
  return x.findIndex((v) => Math.abs(v) > level);
}

/** A 2 s 1 kHz tone call at 8 kHz through builtin:echo (200 ms); resolves once the echo is back and the call hung up. */
async function toneCall(r: InProcessRig, sessionId: string, hangUp = true) {
  const p = await r.call(sessionId);
  const tone = tonePcm16(1000, 8000, 16_000);
  await p.sendPaced(tone, 320, 20);
  await waitFor(() => p.audioBytes().length >= tone.length - 640, 5_000, 'the echo');
  if (hangUp) p.close();
  return p;
}

describe('recordings', () => {
  it('records a call: caller tone left, echo right, listed, downloaded byte for byte, seekable', async () => {
    const dir = tempDir();
    rig = await startRig({ env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '200', RECORDINGS_DIR: dir } });
    const manage = await rig.restToken(['media:manage']);
    const put = await call(rig.http, 'PUT', '/v1/media-stream', {
      token: manage,
      body: { media_ws_url: 'wss://example.test/media', recording: true },
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body.recording).toBe(true);
    expect((await call(rig.http, 'GET', '/v1/media-stream', { token: manage })).body.recording).toBe(true);

    const reader = await rig.restToken(['recordings:read']);
    const p = await toneCall(rig, 'rec-e2e', false);
    // While the call lasts: listed as in progress, not downloadable.
    const live = await list(rig, reader, '?session_id=rec-e2e');
    expect(live).toHaveLength(1);
    expect(live[0]).toMatchObject({
      in_progress: true,
      session_id: 'rec-e2e',
      sample_rate: 8000,
      channels: 2,
    });
    const early = await call(rig.http, 'GET', `/v1/recordings/${live[0]!.recording_id}`, { token: reader });
    expect(early.status).toBe(409);
    expect(early.body.error).toBe('conflict');
    p.close();

    let listed: Listed[] = [];
    await waitFor(
      async () => {
        listed = await list(rig!, reader, '?session_id=rec-e2e');
        return listed[0]?.in_progress === false;
      },
      5_000,
      'the recording to be finished',
    );
    const meta = listed[0]!;
    const path = rig.bridge.ctx.recordings.store.wavPath('default', meta.recording_id);
    const onDisk = readFileSync(path);
    expect(meta.bytes).toBe(onDisk.length);
    expect(meta.failed).toBeUndefined();

    const url = `${rig.http}/v1/recordings/${meta.recording_id}`;
    const whole = await download(url, { authorization: `Bearer ${reader}` });
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-type')).toBe('audio/wav');
    expect(whole.headers.get('accept-ranges')).toBe('bytes');
    expect(whole.body.equals(onDisk)).toBe(true);

    const wav = new wavefile.WaveFile(whole.body);
    const fmt = wav.fmt as { numChannels: number; sampleRate: number; bitsPerSample: number };
    expect(fmt).toMatchObject({ numChannels: 2, sampleRate: 8000, bitsPerSample: 16 });
    const [left, right] = wav.getSamples(false, Int16Array) as unknown as Int16Array[];
    expect(meta.duration_ms).toBe(Math.round((left!.length * 1000) / 8000));
    // 2 s of tone each side; measured over 1.5 s of steady tone after each side's start.
    const l0 = onset(left!);
    const r0 = onset(right!);
    const snrL = fitTone(left!.subarray(l0 + 400, l0 + 12_400), 1000, 8000).snrDb;
    const snrR = fitTone(right!.subarray(r0 + 400, r0 + 12_400), 1000, 8000).snrDb;
    console.log(
      `recording: left SNR ${snrL.toFixed(1)} dB, right ${snrR.toFixed(1)} dB, echo lag ${((r0 - l0) / 8).toFixed(0)} ms`,
    );
    expect(snrL).toBeGreaterThanOrEqual(30);
    expect(snrR).toBeGreaterThanOrEqual(30);
    // The echo is 200 ms behind the caller (and the pacing lead / pipeline around it).
    expect((r0 - l0) / 8).toBeGreaterThan(120);
    expect((r0 - l0) / 8).toBeLessThan(400);

    // A range, with the token in the query as an <audio src> carries it.
    const part = await download(`${url}?token=${reader}`, { range: 'bytes=44-1043' });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 44-1043/${onDisk.length}`);
    expect(part.body.equals(onDisk.subarray(44, 1044))).toBe(true);
    const tail = await download(`${url}?token=${reader}`, { range: 'bytes=-100' });
    expect(tail.body.equals(onDisk.subarray(onDisk.length - 100))).toBe(true);
    const past = await download(`${url}?token=${reader}`, { range: `bytes=${onDisk.length}-` });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${onDisk.length}`);
  });

  it('records at the caller rate when the bot audio goes back at another (16 kHz in, 8 kHz out)', async () => {
    rig = await startRig({
      env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '200', RECORDINGS_DIR: tempDir(), DSP_WORKERS: '1' },
    });
    const manage = await rig.restToken(['media:manage']);
    const put = await call(rig.http, 'PUT', '/v1/media-stream', {
      token: manage,
      body: {
        media_ws_url: 'wss://example.test/media',
        codec: 'slin',
        input_sample_rate: 16000,
        output_sample_rate: 8000,
        recording: true,
      },
    });
    expect(put.status, put.text).toBe(200);
    const p = await rig.call('rec-rates');
    const tone = tonePcm16(1000, 16000, 32_000);
    await p.sendPaced(tone, 640, 20);
    await waitFor(() => p.audioBytes().length >= tone.length / 2 - 640, 5_000, 'the echo at 8 kHz');
    p.close();
    const reader = await rig.restToken(['recordings:read']);
    let listed: Listed[] = [];
    await waitFor(
      async () => {
        listed = await list(rig!, reader);
        return listed[0]?.in_progress === false;
      },
      5_000,
      'the recording',
    );
    expect(listed[0]).toMatchObject({ sample_rate: 16000, channels: 2 });
    const wav = new wavefile.WaveFile(
      readFileSync(rig.bridge.ctx.recordings.store.wavPath('default', listed[0]!.recording_id)),
    );
    expect((wav.fmt as { sampleRate: number }).sampleRate).toBe(16000);
    const [left, right] = wav.getSamples(false, Int16Array) as unknown as Int16Array[];
    const l0 = onset(left!);
    const r0 = onset(right!);
    const snrL = fitTone(left!.subarray(l0 + 800, l0 + 24_800), 1000, 16000).snrDb;
    const snrR = fitTone(right!.subarray(r0 + 800, r0 + 24_800), 1000, 16000).snrDb;
    console.log(`recording 16k/8k: left SNR ${snrL.toFixed(1)} dB, right ${snrR.toFixed(1)} dB`);
    expect(snrL).toBeGreaterThanOrEqual(30);
    expect(snrR).toBeGreaterThanOrEqual(30);
  });

  it('holds routes to their scopes and tenants; DELETE removes the file', async () => {
    const dir = tempDir();
    rig = await startRig({
      env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0', RECORDINGS_DIR: dir, RECORD_CALLS: 'true' },
    });
    await toneCall(rig, 'rec-scopes');
    const reader = await rig.restToken(['recordings:read']);
    await waitFor(async () => (await list(rig!, reader))[0]?.in_progress === false, 5_000, 'the recording');
    const [meta] = await list(rig, reader);
    const id = meta!.recording_id;
    const path = `/v1/recordings/${id}`;

    expect((await call(rig.http, 'GET', '/v1/recordings')).status).toBe(401);
    expect((await call(rig.http, 'GET', path)).status).toBe(401);
    const sessionsOnly = await rig.restToken(['sessions:read']);
    expect((await call(rig.http, 'GET', '/v1/recordings', { token: sessionsOnly })).status).toBe(403);
    expect((await call(rig.http, 'GET', path, { token: sessionsOnly })).status).toBe(403);
    expect((await call(rig.http, 'DELETE', path, { token: reader })).status).toBe(403);

    // Another tenant sees nothing: an empty list, 404 for the id, on read and delete alike.
    const other = await rig.restToken(['recordings:read', 'recordings:manage'], 'other');
    expect(await list(rig, other)).toEqual([]);
    const foreign = await call(rig.http, 'GET', path, { token: other });
    expect(foreign.status).toBe(404);
    expect(foreign.body.message).toContain(id);
    expect((await call(rig.http, 'DELETE', path, { token: other })).status).toBe(404);
    expect((await call(rig.http, 'GET', '/v1/recordings/rec_nope', { token: reader })).status).toBe(404);

    // Filtered by session: only that session's.
    expect(await list(rig, reader, '?session_id=someone-else')).toEqual([]);
    expect((await list(rig, reader, '?session_id=rec-scopes')).map((m) => m.recording_id)).toEqual([id]);

    const manager = await rig.restToken(['recordings:manage']);
    const file = rig.bridge.ctx.recordings.store.wavPath('default', id);
    expect(statSync(file).size).toBe(meta!.bytes);
    const del = await call(rig.http, 'DELETE', path, { token: manager });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect(() => statSync(file)).toThrow();
    expect(await list(rig, reader)).toEqual([]);
    expect((await call(rig.http, 'GET', path, { token: reader })).status).toBe(404);
    expect((await call(rig.http, 'DELETE', path, { token: manager })).status).toBe(404);
  });

  it('records nothing by default: no RECORD_CALLS, no tenant "recording"', async () => {
    const dir = join(tempDir(), 'recordings');
    rig = await startRig({ env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0', RECORDINGS_DIR: dir } });
    const p = await toneCall(rig, 'rec-off');
    await p.waitClosed();
    const reader = await rig.restToken(['recordings:read']);
    expect(await list(rig, reader)).toEqual([]);
    expect(() => statSync(dir)).toThrow();
  });

  it('lists newest first', async () => {
    rig = await startRig({
      env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0', RECORDINGS_DIR: tempDir(), RECORD_CALLS: 'true' },
    });
    const reader = await rig.restToken(['recordings:read']);
    for (const id of ['first', 'second']) {
      const p = await rig.call(id);
      await p.sendPaced(tonePcm16(1000, 8000, 1600), 320, 20);
      p.close();
      await waitFor(
        async () => (await list(rig!, reader, `?session_id=${id}`))[0]?.in_progress === false,
        5_000,
        id,
      );
    }
    expect((await list(rig, reader)).map((m) => m.session_id)).toEqual(['second', 'first']);
  });

  it('a disk that refuses the recording stops it with one error and a metric; the call goes on', async () => {
    const base = tempDir();
    const notADir = join(base, 'file');
    writeFileSync(notADir, 'not a directory');
    rig = await startRig({
      env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0', RECORDINGS_DIR: notADir, RECORD_CALLS: 'true' },
      log: 'info',
    });
    const p = await toneCall(rig, 'rec-disk', false);
    // The whole tone came back: the call never noticed.
    const back = p.audioBytes();
    const samples = new Int16Array(back.buffer.slice(back.byteOffset, back.byteOffset + back.length));
    expect(fitTone(samples.subarray(400, 12_400), 1000, 8000).snrDb).toBeGreaterThanOrEqual(30);
    p.close();
    await p.waitClosed();
    const errors = () => rig!.logs.map((l) => JSON.parse(l)).filter((l) => l.level >= 50);
    await waitFor(() => errors().length > 0, 5_000, 'the error line');
    expect(errors()).toHaveLength(1);
    expect(errors()[0]).toMatchObject({ session_id: 'rec-disk', code: 'ENOTDIR' });
    const metrics = await fetch(`${rig.http}/metrics`).then((r) => r.text());
    expect(metrics).toContain('voicebridge_recording_failures_total{code="ENOTDIR"} 1');
  });

  it('"recording" in PUT /v1/media-stream must be a boolean, and false reads back as false', async () => {
    rig = await startRig({ env: { RECORDINGS_DIR: tempDir() } });
    const manage = await rig.restToken(['media:manage']);
    const bad = await call(rig.http, 'PUT', '/v1/media-stream', {
      token: manage,
      body: { media_ws_url: 'wss://example.test/media', recording: 'yes' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/^recording must be/);
    const off = await call(rig.http, 'PUT', '/v1/media-stream', {
      token: manage,
      body: { media_ws_url: 'wss://example.test/media', recording: false },
    });
    expect(off.status).toBe(200);
    expect(off.body.recording).toBe(false);
  });
});
