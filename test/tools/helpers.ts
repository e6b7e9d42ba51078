/**
 * What the tools' tests share: the caller's received audio cut by arrival time, how much of it is the
 * built-in hold sound (its two notes, measured by least-squares fits at their frequencies), and a real
 * HTTP server standing in for a tenant's webhook tool.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { levelOf } from '../../src/audio/level.js';
import { fitTone } from '../../src/audio/tone.js';
import type { TestProvider } from '../helpers/provider.js';

/** The hold chime's notes (src/audio/hold-tone.ts). */
export const HOLD_NOTES_HZ = [659.25, 523.25] as const;

/** PCM16 the caller received with arrival times in [from, to) (performance.now()), concatenated. */
export function heardBetween(p: TestProvider, from: number, to: number): Int16Array {
  const parts = p.audio.filter((a) => a.at >= from && a.at < to).map((a) => a.data);
  const bytes = Buffer.concat(parts);
  const out = new Int16Array(bytes.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readInt16LE(2 * i);
  return out;
}

/**
 * The share of `x`'s power at the hold notes (and their octaves), 0 for silence: a fit per note over
 * 20 ms windows, where one note dominates each window.
 */
export function holdShare(x: Int16Array, rate: number): number {
  const win = rate / 50;
  let total = 0;
  let notes = 0;
  for (let at = 0; at + win <= x.length; at += win) {
    const w = x.subarray(at, at + win);
    let p = 0;
    for (const v of w) p += v * v;
    if (p === 0) continue;
    total += p;
    let best = 0;
    for (const hz of HOLD_NOTES_HZ) {
      const a = fitTone(w, hz, rate).amplitude * 32767;
      const b = fitTone(w, 2 * hz, rate).amplitude * 32767;
      best = Math.max(best, ((a * a + b * b) / 2) * win);
    }
    notes += Math.min(p, best);
  }
  return total === 0 ? 0 : notes / total;
}

/** dBFS of `x`, -Infinity for silence. */
export function dbfsOf(x: Int16Array): number {
  return levelOf(x) ?? Number.NEGATIVE_INFINITY;
}

/** A request the test's tool server received. */
export interface ToolRequestSeen {
  readonly at: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A real HTTP server on 127.0.0.1 standing in for a tenant's tool: `answer` says what each request gets. */
export async function startToolServer(
  answer: (req: ToolRequestSeen, res: ServerResponse) => void,
): Promise<{ url: string; requests: ToolRequestSeen[]; close(): Promise<void> } & AsyncDisposable> {
  const requests: ToolRequestSeen[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const seen = {
        at: performance.now(),
        headers: req.headers,
        body: Buffer.concat(parts).toString('utf8'),
      };
      requests.push(seen);
      answer(seen, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { url: `http://127.0.0.1:${port}`, requests, close, [Symbol.asyncDispose]: close };
}

/** Answers `value` as JSON. */
export function json(res: ServerResponse, value: unknown, status = 200): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
