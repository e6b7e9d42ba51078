/**
 * `POST /emulator/calls` and `GET /emulator/calls/{id}`: synthetic calls the emulator places into the
 * tenant's registered media endpoint. In the default dialect it calls as the voice API provider does: a
 * JWT signed with the registered `media_secret`, `session_start` in the registered format. With
 * `dialect` it calls as that platform does, on the bridge's path for it (or `url`), with the given
 * `auth`. Either way: paced audio, the platform's playback rules, and a record of what came back.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { steadyToneSnrDb } from '../audio/tone.js';
import { mintToken, type RestVerifier } from '../auth/jwt.js';
import { BridgeError, invalidField } from '../errors.js';
import type { Logger } from '../log.js';
import { type AudioSpec, parseAudioSpec, renderAudio } from './audio-source.js';
import { type CallerOptions, type CallReport, SyntheticCall } from './caller.js';
import { type DialectName, TWINS } from './dialects/index.js';
import {
  dialectUrl,
  isRootDialect,
  isTcpDialect,
  parseAuth,
  parseDialect,
  parseDialectCodec,
  parseDialectRate,
  parseDtmf,
  ROOT_DIALECT_NAME,
  TCP_DIALECT_NAMES,
} from './dialects/params.js';
import type { EmulatorState } from './state.js';

/** Reports kept for GET after a call ends; the oldest go first. */
const MAX_CALL_RECORDS = 1_000;
const MAX_CALL_SECONDS = 3_600;

interface CallRecord {
  readonly tenant: string;
  readonly dialect: DialectName;
  readonly sessionId: string;
  readonly customerPhone: string;
  readonly direction: 'inbound' | 'outbound';
  readonly audio: string;
  readonly spec: AudioSpec;
  readonly call: SyntheticCall;
  report?: CallReport;
}

export interface EmulatorCallsOptions {
  readonly state: EmulatorState;
  readonly verify: RestVerifier;
  readonly log: Logger;
  /** Aborted when the emulator closes: calls in progress hang up. */
  readonly signal: AbortSignal;
}

export interface EmulatorCalls {
  /** Resolves when every call in progress has ended. */
  settle(): Promise<void>;
}

export function registerEmulatorCalls(app: FastifyInstance, o: EmulatorCallsOptions): EmulatorCalls {
  const records = new Map<string, CallRecord>();
  const running = new Set<Promise<void>>();
  const tenantOf = async (req: FastifyRequest) => (await o.verify(req.headers.authorization)).tenant;

  app.post('/emulator/calls', async (req, reply) => {
    const tenant = await tenantOf(req);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const customerPhone = body.customer_phone ?? '15550100';
    if (typeof customerPhone !== 'string' || !/^\+?[0-9]{1,32}$/.test(customerPhone)) {
      throw invalidField('customer_phone', 'a bare phone number', customerPhone);
    }
    const direction = body.direction ?? 'inbound';
    if (direction !== 'inbound' && direction !== 'outbound') {
      throw invalidField('direction', '"inbound" or "outbound"', direction);
    }
    const seconds = body.seconds ?? 5;
    if (typeof seconds !== 'number' || !(seconds > 0 && seconds <= MAX_CALL_SECONDS)) {
      throw invalidField('seconds', `a number of seconds above 0 and at most ${MAX_CALL_SECONDS}`, seconds);
    }
    const audio = typeof body.audio === 'string' ? body.audio : 'tone:440';
    const spec = parseAudioSpec(body.audio ?? audio);
    const dialect = parseDialect(body.dialect ?? ROOT_DIALECT_NAME);
    const dtmf = parseDtmf(body.dtmf, 'dtmf');
    if (body.url !== undefined && (typeof body.url !== 'string' || !/^(wss?|tcp):\/\/\S+$/.test(body.url)))
      throw invalidField('url', `a ws://, wss:// or (for ${TCP_DIALECT_NAMES}) tcp:// URL`, body.url);
    const stream = o.state.getStream(tenant);
    if (stream === undefined && (isRootDialect(dialect) || body.url === undefined)) {
      throw new BridgeError(
        'conflict',
        'no media stream is registered for this tenant: PUT /v1/media-stream first, or give url',
      );
    }
    if (isTcpDialect(dialect) && body.url === undefined)
      throw invalidField(
        'url',
        `tcp://host:port of the bridge's ${TWINS[dialect].decl.platform} listener`,
        body.url,
      );
    let options: CallerOptions;
    const common = {
      customerPhone,
      direction,
      dialect,
      dtmf,
      keepReceived: spec.kind === 'tone',
      signal: o.signal,
    } as const;
    if (isRootDialect(dialect)) {
      const c = stream!.config;
      options = {
        ...common,
        url: typeof body.url === 'string' ? body.url : c.media_ws_url,
        sessionId: `emu-${randomUUID()}`,
        token:
          stream!.secret === undefined
            ? undefined
            : await mintToken({
                secret: stream!.secret,
                ...(tenant !== 'default' ? { tenant } : {}),
                ttlSeconds: Math.ceil(seconds) + 300,
              }),
        format: {
          codec: c.codec,
          inputRate: c.input_sample_rate,
          outputRate: c.output_sample_rate,
          encoding: c.encoding as 'binary' | 'base64',
          chunkBytes: c.chunk_bytes,
        },
        audio: await renderAudio(spec, c.input_sample_rate, seconds),
      };
    } else {
      const codec = parseDialectCodec(dialect, body.codec, 'codec');
      const rate = parseDialectRate(dialect, body.rate, codec, 'rate');
      options = {
        ...common,
        url:
          typeof body.url === 'string' ? body.url : dialectUrl(stream!.config.media_ws_url, dialect, tenant),
        sessionId: TWINS[dialect].uuidCallIds ? randomUUID() : `CA${randomUUID().replaceAll('-', '')}`,
        rate,
        codec,
        auth: parseAuth(body.auth),
        audio: await renderAudio(spec, rate, seconds),
      };
    }
    const sessionId = options.sessionId;
    const call = new SyntheticCall(options);
    const record: CallRecord = { tenant, dialect, sessionId, customerPhone, direction, audio, spec, call };
    records.set(sessionId, record);
    if (records.size > MAX_CALL_RECORDS) records.delete(records.keys().next().value!);
    o.state.addSession({
      tenant,
      session_id: sessionId,
      customer_phone: customerPhone,
      direction,
      started_at: new Date().toISOString(),
      placed: true,
    });
    const done = call.run().then(
      (report) => {
        record.report = report;
        o.log.info(
          { session_id: sessionId, state: report.state, seconds: report.secondsSent },
          'emulated call ended',
        );
      },
      (err: unknown) => {
        o.log.error({ err, session_id: sessionId }, 'emulated call crashed');
      },
    );
    const tracked = done.finally(() => {
      o.state.removeSession(tenant, sessionId);
      running.delete(tracked);
    });
    running.add(tracked);
    return reply.code(201).send({ session_id: sessionId });
  });

  app.get('/emulator/calls/:id', async (req) => {
    const tenant = await tenantOf(req);
    const r = records.get((req.params as { id: string }).id);
    if (r === undefined || r.tenant !== tenant) throw new BridgeError('not_found', 'no such emulated call');
    return callView(r);
  });

  return {
    async settle() {
      await Promise.all([...running]);
    },
  };
}

function callView(r: CallRecord) {
  const s = r.report ?? r.call.stats;
  const round = (v: number) => Math.round(v * 1000) / 1000;
  const view: Record<string, unknown> = {
    session_id: r.sessionId,
    dialect: r.dialect,
    state: s.state,
    customer_phone: r.customerPhone,
    direction: r.direction,
    audio: r.audio,
    seconds_sent: round(s.secondsSent),
    seconds_received: round(s.secondsReceived),
    chunks_sent: s.chunksSent,
    chunks_received: s.chunksReceived,
    chunks_shed: s.chunksShed,
    marks: [...s.marks],
    clears: s.clears,
    errors: [...s.errors],
  };
  view.breaches = [...r.call.leg.record.breaches];
  if (s.closeCode !== undefined) view.close_code = s.closeCode;
  if (r.report !== undefined) {
    view.inter_arrival_ms = r.report.interArrivalMs;
    view.acked_marks = r.report.ackedMarks;
    view.dtmf_sent = r.report.dtmfSent;
    if (r.spec.kind === 'tone') {
      const snr = steadyToneSnrDb(r.report.received, r.spec.hz, r.call.outputRate);
      view.tone_snr_db = snr === undefined ? null : Math.round(snr * 10) / 10;
    }
  }
  return view;
}
