/**
 * The control API of a speech-to-speech stand-in, under `/emulator/<name>/` on its port: the
 * per-connection records, the decoded input audio as a WAV, and the hooks tests use (refuse or drop
 * connects, close a session, send malformed frames, start speech, ask the client to run a tool, and a
 * dialect's own hooks such as Gemini's `go-away`). JSON in, JSON out; no authentication, like the rest
 * of the stand-in, which listens on 127.0.0.1 unless told otherwise. The OpenAI Realtime stand-in's own
 * control API (src/emulator/realtime/control.ts) takes its WAV writer from here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MALFORMED_KINDS as MALFORMED, type MalformedKind, type StandInConnection } from './connection.js';

/** PCM16 mono as a WAV file. */
export function wav(pcm: Int16Array, rate: number): Buffer {
  const data = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVEfmt ', 8, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

export interface ControlTarget {
  sessions(): StandInConnection[];
  session(id: string): StandInConnection | undefined;
  failNextConnects(status: number, count: number): void;
  dropNextConnects(count: number): void;
  forgetClosed(): number;
}

const MAX_BODY_BYTES = 64 * 1024;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function replyJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A request's JSON object body (empty: `{}`); 413 past 64 KiB, 400 when it is not a JSON object. */
export async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  let size = 0;
  const parts: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `body must be at most ${MAX_BODY_BYTES} bytes`);
    parts.push(chunk as Buffer);
  }
  if (size === 0) return {};
  try {
    const v: unknown = JSON.parse(Buffer.concat(parts).toString('utf8'));
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {}
  throw new HttpError(400, 'body must be a JSON object');
}

function int(body: Record<string, unknown>, key: string, min: number, max: number, dflt: number): number {
  const v = body[key] ?? dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new HttpError(400, `${key} must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
  }
  return v;
}

/** Serves a control request under `prefix`; false when the path is not the control API's. */
export function handleControl(
  req: IncomingMessage,
  res: ServerResponse,
  prefix: string,
  target: ControlTarget,
): boolean {
  const path = (req.url ?? '').split('?')[0]!;
  if (path !== prefix && !path.startsWith(`${prefix}/`)) return false;
  route(req, res, target, prefix, path.slice(prefix.length)).catch((err: unknown) => {
    const status = err instanceof HttpError ? err.status : 500;
    replyJson(res, status, { error: { message: (err as Error).message } });
  });
  return true;
}

async function route(
  req: IncomingMessage,
  res: ServerResponse,
  t: ControlTarget,
  prefix: string,
  path: string,
): Promise<void> {
  const m = req.method ?? 'GET';
  const noRoute = () => new HttpError(404, `no route ${m} ${prefix}${path}`);
  if (path === '/sessions' && m === 'GET')
    return replyJson(res, 200, { sessions: t.sessions().map((s) => s.record.summary()) });
  if (path === '/sessions' && m === 'DELETE') return replyJson(res, 200, { forgotten: t.forgetClosed() });
  if (path === '/fail-connects' && m === 'POST') {
    const body = await readJsonObject(req);
    const status = int(body, 'status', 400, 599, 401);
    const count = int(body, 'count', 1, 1000, 1);
    t.failNextConnects(status, count);
    return replyJson(res, 200, { status, count });
  }
  if (path === '/drop-connects' && m === 'POST') {
    const count = int(await readJsonObject(req), 'count', 1, 1000, 1);
    t.dropNextConnects(count);
    return replyJson(res, 200, { count });
  }
  const sm = /^\/sessions\/([^/]+)(\/[a-z.-]+)?$/.exec(path);
  if (sm === null) throw noRoute();
  const s = t.session(decodeURIComponent(sm[1]!));
  if (s === undefined) throw new HttpError(404, `no session ${sm[1]}`);
  const action = sm[2] ?? '';
  if (action === '' && m === 'GET') return replyJson(res, 200, s.record.detail());
  if (action === '/input.wav' && m === 'GET') {
    const seg = s.record.inputAudio();
    if (seg === undefined) throw new HttpError(404, 'no input audio yet');
    res.writeHead(200, { 'content-type': 'audio/wav', 'x-input-format': seg.format });
    res.end(wav(seg.pcm, seg.rate));
    return;
  }
  if (m !== 'POST') throw noRoute();
  const body = await readJsonObject(req);
  if (action === '/close') {
    const code = int(body, 'code', 1000, 4999, 1000);
    const reason = body.reason ?? '';
    if (typeof reason !== 'string' || Buffer.byteLength(reason) > 123)
      throw new HttpError(400, 'reason must be a string of at most 123 bytes');
    s.close(code, reason);
    return replyJson(res, 200, { closed: s.record.id, code });
  }
  if (action === '/speech-started') {
    s.speechStarted();
    return replyJson(res, 200, { session: s.record.id });
  }
  if (action === '/malformed') {
    const kind = body.kind ?? 'json';
    if (!(MALFORMED as readonly unknown[]).includes(kind))
      throw new HttpError(400, `kind must be one of ${MALFORMED.join(', ')}, got ${JSON.stringify(kind)}`);
    s.sendMalformed(kind as MalformedKind);
    return replyJson(res, 200, { kind });
  }
  if (action === '/tool-call') {
    const name = body.name;
    const parameters = body.parameters ?? {};
    if (typeof name !== 'string' || name === '') throw new HttpError(400, 'name must be a non-empty string');
    if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters))
      throw new HttpError(400, 'parameters must be a JSON object');
    const speakMs = int(body, 'speak_ms', 0, 600_000, 0);
    try {
      const id = s.callTool(name, parameters as Record<string, unknown>, speakMs);
      return replyJson(res, 200, { id, name });
    } catch (err) {
      throw new HttpError(409, (err as Error).message);
    }
  }
  if (s.action !== undefined) {
    let answer: Record<string, unknown> | undefined;
    try {
      answer = s.action(action.slice(1), body);
    } catch (err) {
      throw err instanceof HttpError ? err : new HttpError(409, (err as Error).message);
    }
    if (answer !== undefined) return replyJson(res, 200, answer);
  }
  throw noRoute();
}
