/**
 * The Ultravox stand-in: `POST /api/calls` (header `X-API-Key`) creates a call on the `serverWebSocket`
 * medium and answers 201 with the Call object, whose `joinUrl` the client then dials (once: a call is
 * joined by one socket, within its `joinTimeout`); `GET /api/calls/{callId}` reads a call back. The
 * control API is under `/emulator/ultravox/`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../log.js';
import { HttpError, readJsonObject, replyJson } from '../s2s/control.js';
import { createStandInHost, type StandInHost } from '../s2s/host.js';
import { CallEntry, CallRequestError, parseCallRequest } from './calls.js';
import { type CallOptions, UltravoxConnection } from './connection.js';

export const CALLS_PATH = '/api/calls';
const JOIN_PATH = /^\/calls\/([0-9a-f-]{36})\/server_web_socket$/;

export interface UltravoxEmulatorOptions extends Partial<CallOptions> {
  /** The one `X-API-Key` accepted; by default any non-empty key. */
  readonly apiKey?: string;
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  readonly maxPayloadBytes?: number;
  readonly log?: Logger;
}

export interface UltravoxEmulator extends StandInHost {
  sessions(): UltravoxConnection[];
  session(id: string): UltravoxConnection | undefined;
  waitForSession(n?: number, timeoutMs?: number): Promise<UltravoxConnection>;
  /** Every call created, by id. */
  calls(): ReadonlyMap<string, CallEntry>;
}

export const CALL_DEFAULTS: CallOptions = { replyMs: 1500, chunkMs: 20, turnSilenceMs: 500 };

const detail = (message: string) => JSON.stringify({ detail: message });

export function createUltravoxEmulator(options: UltravoxEmulatorOptions = {}): UltravoxEmulator {
  const callOptions: CallOptions = {
    replyMs: options.replyMs ?? CALL_DEFAULTS.replyMs,
    chunkMs: options.chunkMs ?? CALL_DEFAULTS.chunkMs,
    turnSilenceMs: options.turnSilenceMs ?? CALL_DEFAULTS.turnSilenceMs,
  };
  const calls = new Map<string, CallEntry>();

  const authorized = (req: IncomingMessage): boolean => {
    const key = req.headers['x-api-key'];
    if (typeof key !== 'string' || key === '')
      throw new HttpError(401, 'Authentication credentials were not provided.');
    if (options.apiKey !== undefined && key !== options.apiKey) throw new HttpError(401, 'Invalid API key.');
    return true;
  };

  const route = (req: IncomingMessage, res: ServerResponse, base: () => string): boolean => {
    const path = (req.url ?? '/').split('?')[0]!;
    const one = /^\/api\/calls\/([^/]+)$/.exec(path);
    if (path !== CALLS_PATH && one === null) return false;
    (async () => {
      authorized(req);
      if (one !== null) {
        if (req.method !== 'GET') throw new HttpError(405, `Method "${req.method}" not allowed.`);
        const call = calls.get(one[1]!);
        if (call === undefined) throw new HttpError(404, 'No Call matches the given query.');
        return replyJson(res, 200, call.view());
      }
      if (req.method !== 'POST') throw new HttpError(405, `Method "${req.method}" not allowed.`);
      const body = await readJsonObject(req);
      let spec: ReturnType<typeof parseCallRequest>;
      try {
        spec = parseCallRequest(body);
      } catch (err) {
        if (err instanceof CallRequestError) throw new HttpError(400, err.message);
        throw err;
      }
      const wsBase = base().replace(/^http/, 'ws');
      const call = new CallEntry(spec, (id) => `${wsBase}/calls/${id}/server_web_socket`);
      calls.set(call.callId, call);
      setTimeout(() => {
        if (call.joined === null && call.ended === null) {
          call.ended = new Date().toISOString();
          call.endReason = 'unjoined';
        }
      }, spec.joinTimeoutMs).unref();
      replyJson(res, 201, call.view());
    })().catch((err: unknown) => {
      const status = err instanceof HttpError ? err.status : 500;
      res.writeHead(status, { 'content-type': 'application/json' }).end(detail((err as Error).message));
    });
    return true;
  };

  const host = createStandInHost({
    name: 'ultravox',
    maxPayloadBytes: options.maxPayloadBytes ?? 16 * 1024 * 1024,
    ...(options.tls ? { tls: options.tls } : {}),
    ...(options.log ? { log: options.log } : {}),
    refusalBody: (status) => detail(`The stand-in refused this connection (${status}).`),
    route,
    accept: (_req, url) => {
      const m = JOIN_PATH.exec(url.pathname);
      if (m === null) return undefined;
      const call = calls.get(m[1]!);
      if (call === undefined)
        return { refuse: { status: 404, body: detail('No Call matches the given query.') } };
      if (call.ended !== null)
        return { refuse: { status: 409, body: detail(`The call has ended (${call.endReason}).`) } };
      if (call.joined !== null)
        return { refuse: { status: 409, body: detail('The call was already joined.') } };
      return {
        accept: (ws) => {
          call.joined = new Date().toISOString();
          return new UltravoxConnection(ws, call, callOptions);
        },
      };
    },
  });

  return {
    ...host,
    sessions: () => host.sessions() as UltravoxConnection[],
    session: (id) => host.session(id) as UltravoxConnection | undefined,
    waitForSession: async (n, timeoutMs) => (await host.waitForSession(n, timeoutMs)) as UltravoxConnection,
    calls: () => calls,
  };
}
