import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { generateTone } from '../../src/audio/tone.js';
import { type EchoServer, startEchoServer } from '../../src/load/echo-server.js';
import { asBackground } from '../../src/load/markers.js';
import { orchestrate } from '../../src/load/orchestrator.js';
import { buildReport } from '../../src/load/report.js';
import type { RunOptions } from '../../src/load/runner.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const base = (url: string): RunOptions => ({
  url,
  calls: 6,
  seconds: 2,
  rampSeconds: 0,
  rate: 8000,
  codec: 'slin',
  encoding: 'binary',
  token: undefined,
  background: asBackground(generateTone(440, 8000, 8000)),
  chunkMs: 20,
  markerEveryMs: 400,
  markerBurstMs: 60,
  drainMs: 500,
  markerTimeoutMs: 2_000,
  idPrefix: 'test',
});

describe('load generator', () => {
  let echo: EchoServer | undefined;
  let refusing: Server | undefined;
  afterEach(async () => {
    await echo?.close();
    echo = undefined;
    await new Promise<void>((r) => (refusing ? refusing.close(() => r()) : r()));
    refusing = undefined;
  });

  it('times every marker through a bare echo, in two processes, and reports the echo server', async () => {
    echo = await startEchoServer();
    for (const encoding of ['binary', 'base64'] as const) {
      const options: RunOptions = {
        ...base(echo.url),
        encoding,
        codec: encoding === 'base64' ? 'pcmu' : 'slin',
      };
      const result = await orchestrate(options, 2, () => {});
      const report = buildReport('echo', options, result);
      expect(report.processes).toBe(2);
      expect(report.connected).toBe(6);
      expect(report.failed).toBe(0);
      // 2 s at one marker each 400 ms, the first after one interval: 4 per call.
      expect(report.markers.sent).toBe(6 * 4);
      expect(report.markers.returned).toBe(report.markers.sent);
      expect(report.markers.lost).toBe(0);
      expect(report.roundTripMs.n).toBe(report.markers.sent);
      // Loopback echo: well under a chunk; generous for a busy 2-core machine.
      expect(report.roundTripMs.p50).toBeLessThan(20);
      expect(report.audioReturnedPct).toBe(100);
      expect(report.interArrivalMs.p50).toBeGreaterThan(10);
      expect(report.interArrivalMs.p50).toBeLessThan(30);
      expect(report.server).not.toBeNull();
      expect(report.server!.rssMb).toBeGreaterThan(10);
    }
  });

  it("with the server's pid, splits its CPU by thread over the same window and names the load processes", async () => {
    // The echo runs in this process, so its pid is ours.
    echo = await startEchoServer();
    const options: RunOptions = { ...base(echo.url), calls: 4 };
    let pids: number[] = [];
    const result = await orchestrate(options, 2, () => {}, {
      serverPid: process.pid,
      onLoadProcesses: (p) => {
        pids = p;
      },
    });
    expect(pids).toHaveLength(2);
    expect(pids).not.toContain(process.pid);
    const report = buildReport('echo', options, result);
    const threads = report.server!.threads!;
    expect(threads.counts.main).toBe(1);
    expect(threads.counts.other).toBeGreaterThan(0);
    // The threads' sum is the process's CPU over the window (at least 1 s), to two /proc clock ticks
    // (10 ms each) either way.
    const sum = threads.main + threads.workers + threads.other;
    const tick = (2 * 10) / report.connected;
    expect(Math.abs(sum - report.server!.cpuMsPerCallSecond)).toBeLessThanOrEqual(
      0.3 * report.server!.cpuMsPerCallSecond + tick,
    );
    expect(sum).toBeGreaterThan(0);
  });

  it('reads the CPU over the window asked for: none when it would start after the load ends', async () => {
    echo = await startEchoServer();
    const options: RunOptions = { ...base(echo.url), calls: 2, seconds: 3 };
    const watch = (settleSeconds: number) => ({
      serverPid: process.pid,
      window: { settleSeconds, trailSeconds: 0 },
    });
    // Settled 1 s after the ramp, to the load's end: the 3 s of load hold a window of samples.
    const settled = await orchestrate(options, 1, () => {}, watch(1));
    expect(settled.server).toBeDefined();
    expect(settled.threads).toBeDefined();
    // Settled past the load's end, with no trail: the window never opens, so nothing is read.
    const past = await orchestrate(options, 1, () => {}, watch(4));
    expect(past.server).toBeUndefined();
    expect(past.threads).toBeUndefined();
  });

  it('a delayed bare echo gives every marker back the delay later, none lost, all audio back', async () => {
    echo = await startEchoServer(0, '127.0.0.1', { delayMs: 150 });
    const options: RunOptions = { ...base(echo.url), calls: 4 };
    const report = buildReport('echo', options, await orchestrate(options, 1, () => {}));
    expect(report.connected).toBe(4);
    expect(report.markers.sent).toBe(4 * 4);
    expect(report.markers.returned).toBe(report.markers.sent);
    expect(report.markers.lost).toBe(0);
    // Held 150 ms: never early; the upper bound leaves room for a busy test machine.
    expect(report.roundTripMs.p50).toBeGreaterThanOrEqual(150);
    expect(report.roundTripMs.p50).toBeLessThan(150 + 40);
    expect(report.audioReturnedPct).toBe(100);
    // Every call sent its 2 s of 8 kHz audio, less what its handshake took (a call's audio clock
    // starts when its connection opens; the run stops sending at the same instant for all), and all
    // of it came back.
    expect(report.samples.sent).toBeGreaterThanOrEqual(4 * 1.8 * 8000);
    expect(report.samples.sent).toBeLessThanOrEqual(4 * 2 * 8000);
    expect(report.samples.received).toBe(report.samples.sent);
    // Every chunk is held the same time, so they come back 20 ms apart as they were sent.
    expect(report.interArrivalMs.p50).toBeGreaterThan(15);
    expect(report.interArrivalMs.p50).toBeLessThan(25);
  });

  it('a delayed echo keeps the frames of each connection in order, text as text, and sends nothing after close', async () => {
    echo = await startEchoServer(0, '127.0.0.1', { delayMs: 80 });
    const open = async () => {
      const ws = new WebSocket(echo!.url);
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      const got: { data: string; binary: boolean; at: number }[] = [];
      ws.on('message', (data, binary) => got.push({ data: String(data), binary, at: performance.now() }));
      return { ws, got };
    };
    const a = await open();
    const b = await open();
    const sentAt = performance.now();
    for (let i = 0; i < 20; i++) {
      a.ws.send(Buffer.from(`a${i}`));
      b.ws.send(`{"n":${i}}`);
    }
    await waitFor(() => a.got.length >= 20 && b.got.length >= 20, 5_000, 'the 20 frames back on each');
    expect(a.got.map((m) => m.data)).toEqual(Array.from({ length: 20 }, (_, i) => `a${i}`));
    expect(a.got.every((m) => m.binary)).toBe(true);
    expect(b.got.map((m) => m.data)).toEqual(Array.from({ length: 20 }, (_, i) => `{"n":${i}}`));
    expect(b.got.some((m) => m.binary)).toBe(false);
    for (const m of [...a.got, ...b.got]) expect(m.at - sentAt).toBeGreaterThanOrEqual(80);
    // Frames still held when the server closes are never sent.
    const before = a.got.length;
    a.ws.send(Buffer.from('late'));
    // The server answers a ping after the frames before it: once the pong is back, 'late' is held.
    const pong = new Promise((r) => a.ws.once('pong', r));
    a.ws.ping();
    await pong;
    await echo.close();
    echo = undefined;
    await quietFor(150, 'no frame after the close');
    expect(a.got.length).toBe(before);
  });

  it('refuses a delay that is not a whole number of ms from 0 to 10000', async () => {
    await expect(startEchoServer(0, '127.0.0.1', { delayMs: -1 })).rejects.toThrow(/delayMs must be/);
    await expect(startEchoServer(0, '127.0.0.1', { delayMs: 1.5 })).rejects.toThrow(/delayMs must be/);
  });

  it('counts calls refused before the upgrade as failed, by status', async () => {
    refusing = createServer((_req, res) => res.writeHead(401).end());
    refusing.on('upgrade', (_req, socket) =>
      socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n'),
    );
    await new Promise<void>((r) => refusing!.listen(0, '127.0.0.1', r));
    const port = (refusing.address() as AddressInfo).port;
    const options = { ...base(`ws://127.0.0.1:${port}/v1/media`), calls: 3, seconds: 1, drainMs: 100 };
    const result = await orchestrate(options, 1, () => {});
    const report = buildReport('bridge', options, result);
    expect(report.connected).toBe(0);
    expect(report.failed).toBe(3);
    expect(report.failures).toEqual({ http_401: 3 });
    expect(report.markers.sent).toBe(0);
  });
});
