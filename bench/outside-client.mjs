#!/usr/bin/env node
/**
 * A load client that knows nothing of the bridge's code: plain Node and `ws`, one process, its own
 * clock. It places N calls on a `/v1/media` endpoint as the voice API's provider would (session_start,
 * then 8 kHz PCM16 in 20 ms binary frames: silence, with one full-scale 1 kHz chunk every 500 ms) and
 * times each tone's round trip from the moment its chunk was sent to the arrival of the frame that holds
 * its echo's onset, found in the audio that came back (`roundTripMs`); `onsetMs` adds the onset's place
 * in that frame, so it also counts the delay inside the audio (a resampler's group delay).
 * Its figures are what an outside client sees; bench/tail.ts runs it against the bridge and the bare
 * delayed echo in turn.
 *
 *   node bench/outside-client.mjs --url ws://127.0.0.1:8080/v1/media --calls 150 --seconds 30
 *
 * Prints one JSON object: round-trip percentiles (ms), tones sent, returned and lost, the client's own
 * CPU, how late its sends ran and how long its thread waited for a CPU (on Linux): a client held up
 * itself reads late arrivals that are its own.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    calls: { type: 'string', default: '100' },
    seconds: { type: 'string', default: '30' },
    'ramp-ms': { type: 'string', default: '2000' },
    'tone-every-ms': { type: 'string', default: '500' },
    'drain-ms': { type: 'string', default: '2000' },
    token: { type: 'string' },
  },
});
if (values.url === undefined) {
  process.stderr.write(
    'usage: node bench/outside-client.mjs --url ws://HOST:PORT/v1/media [--calls N] [--seconds S]\n',
  );
  process.exit(2);
}
const CALLS = Number(values.calls);
const SECONDS = Number(values.seconds);
const RAMP_MS = Number(values['ramp-ms']);
const RATE = 8000;
const CHUNK_MS = 20;
const CHUNK_SAMPLES = (RATE * CHUNK_MS) / 1000;
const TONE_EVERY = Math.round(Number(values['tone-every-ms']) / CHUNK_MS);
/** A returned sample past this is the tone: silence (and a resampler's ripple on it) is far below. */
const THRESHOLD = 8000;
/**
 * After an onset, the detector ignores the next 250 ms of the returned audio (the rest of the tone and
 * its ringing), counted in samples: audio that comes back in a burst after a stall still holds each
 * tone 500 ms of audio after the one before, however close together its frames arrive.
 */
const DEAF_SAMPLES = (250 * RATE) / 1000;
/** A tone not back within this is lost. */
const LOST_MS = 3000;

const silence = Buffer.alloc(CHUNK_SAMPLES * 2);
const tone = Buffer.alloc(CHUNK_SAMPLES * 2);
for (let i = 0; i < CHUNK_SAMPLES; i++)
  tone.writeInt16LE(Math.round(32767 * Math.sin((2 * Math.PI * 1000 * i) / RATE + Math.PI / 2)), i * 2);

/** Send -> arrival of the frame holding the echo's onset (what the socket shows). */
const rtts = [];
/** Send -> the onset itself: that frame's arrival plus the onset's place in it (the audio's own delay). */
const onsets = [];
let sent = 0;
let returned = 0;
let lost = 0;
let unmatched = 0;
let failed = 0;
let dropped = 0;
/** How late each send ran against its schedule, ms. */
const lateness = [];

class Call {
  constructor(n, startAt) {
    this.id = `outside-${process.pid}-${n}`;
    this.startAt = startAt;
    this.t0 = 0;
    this.index = 0;
    this.open = false;
    this.done = false;
    this.outstanding = [];
    /** Samples of audio received, and the first one the detector listens to again. */
    this.received = 0;
    this.deafUntil = 0;
    /** This call's round trips (frame arrival), for the spread between calls. */
    this.rtts = [];
  }
}

/** ms this process's main thread has waited, runnable, for a CPU (Linux schedstat); null elsewhere. */
function waitedMs() {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return null;
  }
}
const waited0 = waitedMs();

const calls = [];
const t0 = performance.now();
const stopAt = t0 + RAMP_MS + SECONDS * 1000;
for (let n = 0; n < CALLS; n++) calls.push(new Call(n, t0 + (CALLS > 1 ? (RAMP_MS * n) / CALLS : 0)));

function connect(call) {
  const headers = values.token === undefined ? {} : { authorization: `Bearer ${values.token}` };
  const ws = new WebSocket(values.url, { headers, perMessageDeflate: false });
  call.ws = ws;
  ws.on('open', () => {
    ws.send(
      JSON.stringify({
        event: 'session_start',
        session_id: call.id,
        direction: 'inbound',
        customer_phone: '+15550100000',
        started_at: new Date().toISOString(),
        media: { codec: 'slin', sample_rate: RATE, encoding: 'binary', chunk_bytes: CHUNK_SAMPLES * 2 },
      }),
    );
    call.open = true;
    call.t0 = performance.now();
    call.index = 0;
  });
  ws.on('message', (data, isBinary) => {
    if (!isBinary) return;
    const now = performance.now();
    const n = data.length >> 1;
    const first = call.received;
    call.received += n;
    for (let i = Math.max(0, call.deafUntil - first); i < n; i++) {
      if (first + i < call.deafUntil) continue;
      const v = data.readInt16LE(i * 2);
      if (v > THRESHOLD || v < -THRESHOLD) {
        call.deafUntil = first + i + DEAF_SAMPLES;
        match(call, now, now + (i * 1000) / RATE);
      }
    }
  });
  ws.on('error', () => {});
  ws.on('close', () => {
    if (!call.open && !call.done) failed++;
    else if (!call.done) dropped++;
    call.open = false;
    call.done = true;
  });
}

function match(call, arrivedAt, at) {
  const out = call.outstanding;
  while (out.length > 0 && at - out[0] > LOST_MS) {
    out.shift();
    lost++;
  }
  const sentAt = out.shift();
  if (sentAt === undefined) {
    unmatched++;
    return;
  }
  rtts.push(arrivedAt - sentAt);
  call.rtts.push(arrivedAt - sentAt);
  onsets.push(at - sentAt);
  returned++;
}

/** One timer for every call: each call's chunks go at t0 + i * 20 ms of its own schedule. */
let started = 0;
function tick() {
  const now = performance.now();
  while (started < calls.length && calls[started].startAt <= now) connect(calls[started++]);
  let next = started < calls.length ? calls[started].startAt : Number.POSITIVE_INFINITY;
  if (now < stopAt) {
    for (const call of calls) {
      if (!call.open || call.done) continue;
      let due = call.t0 + call.index * CHUNK_MS;
      while (due <= now) {
        const isTone = call.index > 0 && call.index % TONE_EVERY === 0;
        lateness.push(now - due);
        call.ws.send(isTone ? tone : silence);
        if (isTone) {
          call.outstanding.push(performance.now());
          sent++;
        }
        call.index++;
        due = call.t0 + call.index * CHUNK_MS;
      }
      if (due < next) next = due;
    }
  }
  if (now < stopAt || started < calls.length)
    setTimeout(tick, Math.max(0, Math.ceil(next - performance.now())));
  else setTimeout(finish, Number(values['drain-ms']));
}

function pct(sorted, p) {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round(sorted[i] * 100) / 100;
}

function finish() {
  for (const call of calls) {
    lost += call.outstanding.length;
    call.done = true;
    call.ws?.close(1000);
  }
  const cpu = process.cpuUsage();
  const sorted = rtts.sort((a, b) => a - b);
  const sortedOnsets = onsets.sort((a, b) => a - b);
  // A call whose every round trip is longer than the others' (a standing delay of its own) shows here.
  const medians = calls
    .filter((c) => c.rtts.length > 0)
    .map((c) =>
      pct(
        c.rtts.sort((a, b) => a - b),
        50,
      ),
    )
    .sort((a, b) => a - b);
  const late = lateness.sort((a, b) => a - b);
  process.stdout.write(
    `${JSON.stringify({
      calls: CALLS,
      seconds: SECONDS,
      failed,
      dropped,
      tones: { sent, returned, lost, unmatched },
      roundTripMs: {
        p50: pct(sorted, 50),
        p90: pct(sorted, 90),
        p99: pct(sorted, 99),
        p999: pct(sorted, 99.9),
        max: sorted.length > 0 ? Math.round(sorted[sorted.length - 1] * 100) / 100 : null,
      },
      perCallMedianMs: {
        min: medians[0] ?? null,
        p50: pct(medians, 50),
        p99: pct(medians, 99),
        max: medians.at(-1) ?? null,
      },
      onsetMs: { p50: pct(sortedOnsets, 50), p99: pct(sortedOnsets, 99), max: pct(sortedOnsets, 100) },
      sendLatenessMs: {
        p50: pct(late, 50),
        p99: pct(late, 99),
        max: late.length > 0 ? late[late.length - 1] : null,
      },
      clientCpuMs: Math.round((cpu.user + cpu.system) / 1000),
      clientWaitedMs: waited0 === null ? null : Math.round(waitedMs() - waited0),
    })}\n`,
  );
  setTimeout(() => process.exit(0), 200).unref();
}

tick();
