#!/usr/bin/env node
/**
 * `npm run call -- --url ws://127.0.0.1:8080/v1/media --secret S --audio tone:440 --seconds 10
 *  [--rate 8000] [--output-rate R] [--encoding binary|base64] [--codec slin] [--chunk-ms 20] [--json]`
 * Places one synthetic call into a media endpoint, as the provider would, and prints what it heard:
 * seconds, tone SNR of the returned audio, chunk inter-arrival p50/p99, marks, clears and errors.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { bytesForMs, parseCodec, parseEncoding, parseTelephonyRate } from '../audio/format.js';
import { steadyToneSnrDb } from '../audio/tone.js';
import { mintToken } from '../auth/jwt.js';
import { DEV_MEDIA_SECRET } from '../config.js';
import { parseAudioSpec, renderAudio } from '../emulator/audio-source.js';
import { type CallReport, SyntheticCall } from '../emulator/caller.js';

const USAGE = `usage: npm run call -- [--url ws://127.0.0.1:8080/v1/media] [--secret S | --no-auth] [--tenant T]
                        [--audio tone:440|wav:<path>|speech:<text>|silence] [--seconds 10]
                        [--rate 8000] [--output-rate R] [--encoding binary|base64] [--codec slin|pcmu|pcma]
                        [--chunk-ms 20] [--phone 15550100] [--json]
  --secret   media secret the token is signed with (default: MEDIA_SECRET, else the development secret)
`;

function fail(message: string): never {
  process.stderr.write(`call: ${message}\n${USAGE}`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'ws://127.0.0.1:8080/v1/media' },
    secret: { type: 'string' },
    'no-auth': { type: 'boolean', default: false },
    tenant: { type: 'string' },
    audio: { type: 'string', default: 'tone:440' },
    seconds: { type: 'string', default: '10' },
    rate: { type: 'string', default: '8000' },
    'output-rate': { type: 'string' },
    encoding: { type: 'string', default: 'binary' },
    codec: { type: 'string', default: 'slin' },
    'chunk-ms': { type: 'string', default: '20' },
    phone: { type: 'string', default: '15550100' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

let report: CallReport;
try {
  const inputRate = parseTelephonyRate(Number(values.rate), '--rate');
  const outputRate = parseTelephonyRate(Number(values['output-rate'] ?? values.rate), '--output-rate');
  const encoding = parseEncoding(values.encoding, '--encoding');
  const codec = parseCodec(values.codec, '--codec');
  const seconds = Number(values.seconds);
  if (!(seconds > 0 && seconds <= 3600))
    fail(`--seconds must be above 0 and at most 3600, got ${values.seconds}`);
  const chunkMs = Number(values['chunk-ms']);
  if (!(Number.isInteger(chunkMs) && chunkMs >= 10 && chunkMs <= 200)) {
    fail(`--chunk-ms must be a whole number from 10 to 200, got ${values['chunk-ms']}`);
  }
  const spec = parseAudioSpec(values.audio, '--audio');
  const audio = await renderAudio(spec, inputRate, seconds);
  const token = values['no-auth']
    ? undefined
    : await mintToken({
        secret: values.secret ?? (process.env.MEDIA_SECRET || DEV_MEDIA_SECRET),
        ttlSeconds: Math.ceil(seconds) + 300,
        ...(values.tenant !== undefined ? { tenant: values.tenant } : {}),
      });
  const call = new SyntheticCall({
    url: values.url,
    token,
    sessionId: `call-${randomUUID()}`,
    customerPhone: values.phone,
    direction: 'inbound',
    format: {
      codec: values.codec,
      inputRate,
      outputRate,
      encoding,
      chunkBytes: bytesForMs(codec, outputRate, chunkMs),
    },
    audio,
    keepReceived: spec.kind === 'tone',
  });
  const tty = process.stderr.isTTY === true;
  const progress = setInterval(() => {
    const s = call.stats;
    const line = `${s.state}: ${s.secondsSent.toFixed(1)} s sent, ${s.secondsReceived.toFixed(1)} s received, marks ${s.marks.length}, clears ${s.clears}, errors ${s.errors.length}`;
    process.stderr.write(tty ? `\r${line}\u001b[K` : `${line}\n`);
  }, 1000);
  try {
    report = await call.run();
  } finally {
    clearInterval(progress);
    if (tty) process.stderr.write('\r\u001b[K');
  }
  const snr = spec.kind === 'tone' ? steadyToneSnrDb(report.received, spec.hz, outputRate) : undefined;
  const { received: _audio, ...rest } = report;
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ ...rest, toneSnrDb: snr ?? null }, null, 2)}\n`);
  } else {
    const lines = [
      `call ${report.sessionId}: ${report.state} (close ${report.closeCode ?? 'none'}${report.closeReason ? ` ${report.closeReason}` : ''})`,
      `  sent     ${report.secondsSent.toFixed(2)} s in ${report.chunksSent} chunks (${report.chunksShed} shed); send lateness p99 ${report.sendLatenessMs.p99} ms`,
      `  received ${report.secondsReceived.toFixed(2)} s in ${report.chunksReceived} chunks`,
      `  inter-arrival p50 ${report.interArrivalMs.p50} ms, p99 ${report.interArrivalMs.p99} ms, max ${report.interArrivalMs.max} ms`,
    ];
    if (spec.kind === 'tone')
      lines.push(`  tone SNR ${snr === undefined ? 'n/a (nothing came back)' : `${snr.toFixed(1)} dB`}`);
    lines.push(`  marks ${report.marks.length}, clears ${report.clears}, errors ${report.errors.length}`);
    for (const e of report.errors) lines.push(`    error ${e.code ?? ''} ${e.message}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
} catch (err) {
  fail(err instanceof Error ? err.message : String(err));
}
process.exit(report.state === 'ended' ? 0 : 1);
