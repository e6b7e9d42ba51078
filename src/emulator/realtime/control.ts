/**
 * The control API on the stand-in's port, under /emulator/realtime/: the per-connection records, the
 * decoded input audio as a WAV, and the hooks tests use (refuse connects, close a session, send
 * malformed frames, emit speech_started, make the model call a tool). JSON in, JSON out; it has no authentication, like the rest of
 * the stand-in, which listens on 127.0.0.1 unless told otherwise.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { wav } from '../s2s/control.js';
import type { RealtimeConnection } from './connection.js';
import { MALFORMED_KINDS, type MalformedKind } from './faults.js';

export const CONTROL_PREFIX = '/emulator/realtime';

export interface ControlTarget {
  sessions(): RealtimeConnection[];
  session(id: string): RealtimeConnection | undefined;
  failNextConnects(status: number, count: number): void;
  forgetClosed(): number;
}

const MAX_BODY_BYTES = 64 * 1024;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
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

/** Serves a control request; false when the path is not the control API's. */
export function handleControl(req: IncomingMessage, res: ServerResponse, target: ControlTarget): boolean {
  const path = (req.url ?? '').split('?')[0]!;
  if (path !== CONTROL_PREFIX && !path.startsWith(`${CONTROL_PREFIX}/`)) return false;
  route(req, res, target, path.slice(CONTROL_PREFIX.length)).catch((err: unknown) => {
    const status = err instanceof HttpError ? err.status : 500;
    reply(res, status, { error: { message: (err as Error).message } });
  });
  return true;
}

async function route(
  req: IncomingMessage,
  res: ServerResponse,
  t: ControlTarget,
  path: string,
): Promise<void> {
  const m = req.method ?? 'GET';
  if (path === '/sessions' && m === 'GET')
    return reply(res, 200, { sessions: t.sessions().map((s) => s.record.summary()) });
  if (path === '/sessions' && m === 'DELETE') return reply(res, 200, { forgotten: t.forgetClosed() });
  if (path === '/fail-connects' && m === 'POST') {
    const body = await readJson(req);
    const status = int(body, 'status', 400, 599, 401);
    const count = int(body, 'count', 1, 1000, 1);
    t.failNextConnects(status, count);
    return reply(res, 200, { status, count });
  }
  const sm = /^\/sessions\/([^/]+)(\/[a-z.-]+)?$/.exec(path);
  const s = sm === null ? undefined : t.session(decodeURIComponent(sm[1]!));
  if (sm === null) throw new HttpError(404, `no route ${m} ${CONTROL_PREFIX}${path}`);
  if (s === undefined) throw new HttpError(404, `no session ${sm[1]}`);
  const action = sm[2] ?? '';
  if (action === '' && m === 'GET') return reply(res, 200, s.record.detail());
  if (action === '/input.wav' && m === 'GET') {
    const seg = s.record.inputAudio();
    if (seg === undefined) throw new HttpError(404, 'no input audio yet');
    res.writeHead(200, { 'content-type': 'audio/wav', 'x-input-format': seg.format });
    res.end(wav(seg.pcm, seg.rate));
    return;
  }
  if (m !== 'POST') throw new HttpError(404, `no route ${m} ${CONTROL_PREFIX}${path}`);
  const body = await readJson(req);
  if (action === '/close') {
    const code = int(body, 'code', 1000, 4999, 1000);
    const reason = body.reason ?? '';
    if (typeof reason !== 'string' || Buffer.byteLength(reason) > 123)
      throw new HttpError(400, 'reason must be a string of at most 123 bytes');
    s.close(code, reason);
    return reply(res, 200, { closed: s.record.id, code });
  }
  if (action === '/speech-started') {
    s.speechStarted(undefined, true);
    return reply(res, 200, { session: s.record.id });
  }
  if (action === '/tool-call') {
    // The model calls a tool now: {name, arguments?, speak_ms?, call_id?}.
    const name = body.name;
    if (typeof name !== 'string' || !/^[a-z0-9_]{1,64}$/.test(name))
      throw new HttpError(400, 'name must be a tool name of 1 to 64 characters of a-z, 0-9 and _');
    const args = body.arguments ?? {};
    if (typeof args !== 'object' || args === null || Array.isArray(args))
      throw new HttpError(400, 'arguments must be a JSON object');
    const speakMs = int(body, 'speak_ms', 0, 600_000, 0);
    const callId = body.call_id;
    if (callId !== undefined && (typeof callId !== 'string' || callId.length === 0 || callId.length > 64))
      throw new HttpError(400, 'call_id must be a string of 1 to 64 characters');
    try {
      return reply(res, 200, { call_id: s.callTool(name, args, speakMs, callId) });
    } catch (err) {
      throw new HttpError(409, (err as Error).message);
    }
  }
  if (action === '/malformed') {
    const kind = body.kind ?? 'json';
    if (!(MALFORMED_KINDS as readonly unknown[]).includes(kind)) {
      throw new HttpError(
        400,
        `kind must be one of ${MALFORMED_KINDS.join(', ')}, got ${JSON.stringify(kind)}`,
      );
    }
    s.sendMalformed(kind as MalformedKind);
    return reply(res, 200, { kind });
  }
  throw new HttpError(404, `no route ${m} ${CONTROL_PREFIX}${path}`);
}
