#!/usr/bin/env node
/**
 * `npm run call -- [--dialect twilio] --url ws://127.0.0.1:8080/v1/media --audio tone:440 --seconds 10 ...`
 * Places one synthetic call into a media endpoint as the chosen provider would (src/emulator/dialects/)
 * and prints what the caller heard: seconds, tone SNR, chunk inter-arrival p50/p99, marks, clears, the
 * platform's rules the bridge broke, and errors.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { bytesForMs, parseCodec, parseEncoding, parseTelephonyRate } from '../audio/format.js';
import { steadyToneSnrDb } from '../audio/tone.js';
import { mintToken } from '../auth/jwt.js';
import { DEV_MEDIA_SECRET } from '../config.js';
import { parseAudioSpec, renderAudio } from '../emulator/audio-source.js';
import { CallRecording, type CallRecordingResult } from '../emulator/call-recording.js';
import { type CallerOptions, type CallReport, SyntheticCall } from '../emulator/caller.js';
import { type LegAuth, TWINS } from '../emulator/dialects/index.js';
import {
  credentialFlagsUsage,
  DIALECT_CHOICES,
  dialectUrl,
  isRootDialect,
  isTcpDialect,
  parseDialect,
  parseDialectCodec,
  parseDialectRate,
  parseDtmf,
  parseHeader,
  ROOT_DIALECT_NAME,
  TCP_DIALECT_NAMES,
} from '../emulator/dialects/params.js';

const USAGE = `usage: npm run call -- [--dialect ${DIALECT_CHOICES}]
                        [--url ws://127.0.0.1:8080/v1/media[/<dialect>]] [--tenant T]
                        [--audio tone:440|turns:440|wav:<path>|speech:<text>|silence] [--seconds 10] [--rate R]
                        [--codec slin|pcmu|pcma] [--dtmf 1@500,#@900] [--phone 15550100] [--json]
                        [--record out.wav]
  ${ROOT_DIALECT_NAME} dialect:  [--secret S | --no-auth] [--output-rate R] [--encoding binary|base64] [--chunk-ms 20]
  other dialects:   [--auth-token T] [--user U --password P] [--header name:value]
${credentialFlagsUsage('    ')}
  --url            for ${TCP_DIALECT_NAMES}: tcp://host:port (required)
  --audio turns:<hz>[/<on ms>/<off ms>]  a caller who speaks in turns (1 s of tone, 3 s of quiet)
  --record         save the call as the caller had it: a stereo WAV, what it sent left and what it
                   heard right, at the caller's rate
`;

function fail(message: string): never {
  process.stderr.write(`call: ${message}\n${USAGE}`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    dialect: { type: 'string', default: ROOT_DIALECT_NAME },
    url: { type: 'string' },
    secret: { type: 'string' },
    'no-auth': { type: 'boolean', default: false },
    tenant: { type: 'string' },
    audio: { type: 'string', default: 'tone:440' },
    seconds: { type: 'string', default: '10' },
    rate: { type: 'string' },
    'output-rate': { type: 'string' },
    encoding: { type: 'string', default: 'binary' },
    codec: { type: 'string' },
    'chunk-ms': { type: 'string', default: '20' },
    'auth-token': { type: 'string' },
    user: { type: 'string' },
    password: { type: 'string' },
    header: { type: 'string' },
    dtmf: { type: 'string' },
    phone: { type: 'string', default: '15550100' },
    json: { type: 'boolean', default: false },
    record: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

async function options(): Promise<{ o: CallerOptions; toneHz: number | undefined }> {
  const dialect = parseDialect(values.dialect, '--dialect');
  const seconds = Number(values.seconds);
  if (!(seconds > 0 && seconds <= 3600))
    fail(`--seconds must be above 0 and at most 3600, got ${values.seconds}`);
  const spec = parseAudioSpec(values.audio, '--audio');
  const dtmf = parseDtmf(values.dtmf, '--dtmf');
  const common = {
    customerPhone: values.phone,
    direction: 'inbound' as const,
    dtmf,
    keepReceived: spec.kind === 'tone',
    dialect,
  };
  const toneHz = spec.kind === 'tone' ? spec.hz : undefined;
  if (isRootDialect(dialect)) {
    const inputRate = parseTelephonyRate(Number(values.rate ?? 8000), '--rate');
    const outputRate = parseTelephonyRate(Number(values['output-rate'] ?? inputRate), '--output-rate');
    const encoding = parseEncoding(values.encoding, '--encoding');
    const codecName = values.codec ?? 'slin';
    const codec = parseCodec(codecName, '--codec');
    const chunkMs = Number(values['chunk-ms']);
    if (!(Number.isInteger(chunkMs) && chunkMs >= 10 && chunkMs <= 200))
      fail(`--chunk-ms must be a whole number from 10 to 200, got ${values['chunk-ms']}`);
    const token = values['no-auth']
      ? undefined
      : await mintToken({
          secret: values.secret ?? (process.env.MEDIA_SECRET || DEV_MEDIA_SECRET),
          ttlSeconds: Math.ceil(seconds) + 300,
          ...(values.tenant !== undefined ? { tenant: values.tenant } : {}),
        });
    return {
      toneHz,
      o: {
        ...common,
        url: values.url ?? 'ws://127.0.0.1:8080/v1/media',
        token,
        sessionId: `call-${randomUUID()}`,
        format: {
          codec: codecName,
          inputRate,
          outputRate,
          encoding,
          chunkBytes: bytesForMs(codec, outputRate, chunkMs),
        },
        audio: await renderAudio(spec, inputRate, seconds),
      },
    };
  }
  const codec = parseDialectCodec(dialect, values.codec, '--codec');
  const rate = parseDialectRate(
    dialect,
    values.rate === undefined ? undefined : Number(values.rate),
    codec,
    '--rate',
  );
  if (isTcpDialect(dialect) && values.url === undefined)
    fail(`--url tcp://host:port is required for ${dialect}`);
  const url = values.url ?? dialectUrl('ws://127.0.0.1:8080/v1/media', dialect, values.tenant);
  const auth: LegAuth = {
    token: values['auth-token'],
    username: values.user,
    password: values.password,
    header: values.header === undefined ? undefined : parseHeader(values.header, '--header'),
  };
  return {
    toneHz,
    o: {
      ...common,
      url,
      // A platform naming calls by UUID gets one; the others take any id of the platform's shape.
      sessionId: TWINS[dialect].uuidCallIds ? randomUUID() : `CA${randomUUID().replaceAll('-', '')}`,
      rate,
      codec,
      auth,
      audio: await renderAudio(spec, rate, seconds),
    },
  };
}

let report: CallReport;
/** A recording asked for and stopped early fails the command too. */
let recordFailed = false;
try {
  const { o, toneHz } = await options();
  if (values.record === '') fail('--record needs a file name, e.g. --record out.wav');
  let recording: CallRecording | undefined;
  const tap = {
    sent: (pcm: Int16Array) => recording?.sent(pcm),
    heard: (pcm: Int16Array) => recording?.heard(pcm),
  };
  const call = new SyntheticCall(values.record === undefined ? o : { ...o, tap });
  if (values.record !== undefined) {
    // The caller's rate is what it sends; what it hears is resampled to it.
    recording = new CallRecording(values.record, call.leg.rate, call.outputRate);
  }
  const tty = process.stderr.isTTY === true;
  const progress = setInterval(() => {
    const s = call.stats;
    const line = `${s.state}: ${s.secondsSent.toFixed(1)} s sent, ${s.secondsReceived.toFixed(1)} s heard, marks ${s.marks.length}, clears ${s.clears}, breaches ${call.leg.record.breaches.length}, errors ${s.errors.length}`;
    process.stderr.write(tty ? `\r${line}\u001b[K` : `${line}\n`);
  }, 1000);
  let saved: CallRecordingResult | undefined;
  try {
    report = await call.run();
  } finally {
    clearInterval(progress);
    if (tty) process.stderr.write('\r\u001b[K');
    saved = await recording?.close();
  }
  const snr = toneHz === undefined ? undefined : steadyToneSnrDb(report.received, toneHz, report.outputRate);
  const { received: _audio, timeline: _timeline, ...rest } = report;
  const recorded =
    saved === undefined
      ? undefined
      : {
          path: saved.path,
          seconds: saved.frames / saved.rate,
          sampleRate: saved.rate,
          ...(saved.failed === undefined ? {} : { failed: saved.failed }),
        };
  recordFailed = recorded?.failed !== undefined;
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ ...rest, toneSnrDb: snr ?? null, ...(recorded === undefined ? {} : { recorded }) }, null, 2)}\n`,
    );
  } else {
    const lines = [
      `${report.dialect} call ${report.sessionId}: ${report.state} (close ${report.closeCode ?? 'none'}${report.closeReason ? ` ${report.closeReason}` : ''})`,
      `  sent     ${report.secondsSent.toFixed(2)} s in ${report.chunksSent} chunks (${report.chunksShed} shed); send lateness p99 ${report.sendLatenessMs.p99} ms`,
      `  heard    ${report.secondsReceived.toFixed(2)} s from ${report.chunksReceived} messages`,
      `  inter-arrival p50 ${report.interArrivalMs.p50} ms, p99 ${report.interArrivalMs.p99} ms, max ${report.interArrivalMs.max} ms`,
    ];
    if (toneHz !== undefined)
      lines.push(`  tone SNR ${snr === undefined ? 'n/a (nothing came back)' : `${snr.toFixed(1)} dB`}`);
    lines.push(
      `  marks ${report.marks.length}, clears ${report.clears}, dtmf ${report.dtmfSent}, breaches ${report.breaches.length}, errors ${report.errors.length}`,
    );
    for (const b of report.breaches) lines.push(`    breach ${b.rule} (${b.effect}) ${b.detail}`);
    for (const e of report.errors) lines.push(`    error ${e.code ?? ''} ${e.message}`);
    if (recorded !== undefined) {
      lines.push(
        recorded.failed === undefined
          ? `  recorded ${recorded.path}: ${recorded.seconds.toFixed(2)} s, stereo at ${recorded.sampleRate} Hz (sent left, heard right)`
          : `  recording ${recorded.path} stopped early: ${recorded.failed} (${recorded.seconds.toFixed(2)} s written)`,
      );
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  }
} catch (err) {
  fail(err instanceof Error ? err.message : String(err));
}
process.exit(report.state === 'ended' && recordFailed === false ? 0 : 1);
