/**
 * G.711 codec speed: alawmulaw (array API and per-sample functions) against the lookup tables of
 * src/audio/codec.ts, on 20 ms chunks at 8 kHz (160 samples). Prints ns per sample, median of rounds,
 * and the spread (min-max) across rounds. `--json` prints one JSON object.
 *
 *   npx tsx bench/codec.ts [--json]
 */
import alawmulaw from 'alawmulaw';
import {
  ALAW_DECODE,
  ALAW_ENCODE,
  decodeInto,
  encodeInto,
  fromBase64,
  MULAW_DECODE,
  MULAW_ENCODE,
  pcm16View,
  toBase64,
} from '../src/audio/codec.js';

const { alaw, mulaw } = alawmulaw;
const CHUNK = 160;
const CHUNKS = 4096;
const ROUNDS = 7;

// Speech-like input: a sum of tones at a realistic level, so every segment of the laws is exercised.
const pcm = new Int16Array(CHUNK * CHUNKS);
for (let i = 0; i < pcm.length; i++) {
  const t = i / 8000;
  pcm[i] = Math.round(
    9000 * Math.sin(2 * Math.PI * 310 * t) + 5000 * Math.sin(2 * Math.PI * 1230 * t) + 900 * Math.sin(i),
  );
}
const ulawBytes = mulaw.encode(pcm);
const alawBytes = alaw.encode(pcm);
const outPcm = new Int16Array(CHUNK);
const outBytes = new Uint8Array(CHUNK);
let sink = 0;

type Case = () => void;
const cases: Record<string, Case> = {
  'mulaw.decode (alawmulaw, allocates)': () => {
    for (let c = 0; c < CHUNKS; c++) sink += mulaw.decode(ulawBytes.subarray(c * CHUNK, (c + 1) * CHUNK))[0]!;
  },
  'mulaw.decodeSample loop': () => {
    for (let c = 0; c < CHUNKS; c++) {
      const o = c * CHUNK;
      for (let i = 0; i < CHUNK; i++) outPcm[i] = mulaw.decodeSample(ulawBytes[o + i]!);
      sink += outPcm[0]!;
    }
  },
  'mulaw decode table (256)': () => {
    for (let c = 0; c < CHUNKS; c++) {
      decodeInto('pcmu', ulawBytes.subarray(c * CHUNK, (c + 1) * CHUNK), outPcm);
      sink += outPcm[0]!;
    }
  },
  'mulaw.encode (alawmulaw, allocates)': () => {
    for (let c = 0; c < CHUNKS; c++) sink += mulaw.encode(pcm.subarray(c * CHUNK, (c + 1) * CHUNK))[0]!;
  },
  'mulaw.encodeSample loop': () => {
    for (let c = 0; c < CHUNKS; c++) {
      const o = c * CHUNK;
      for (let i = 0; i < CHUNK; i++) outBytes[i] = mulaw.encodeSample(pcm[o + i]!);
      sink += outBytes[0]!;
    }
  },
  'mulaw encode table (64K)': () => {
    for (let c = 0; c < CHUNKS; c++) {
      encodeInto('pcmu', pcm.subarray(c * CHUNK, (c + 1) * CHUNK), outBytes);
      sink += outBytes[0]!;
    }
  },
  'alaw.decode (alawmulaw, allocates)': () => {
    for (let c = 0; c < CHUNKS; c++) sink += alaw.decode(alawBytes.subarray(c * CHUNK, (c + 1) * CHUNK))[0]!;
  },
  'alaw.decodeSample loop': () => {
    for (let c = 0; c < CHUNKS; c++) {
      const o = c * CHUNK;
      for (let i = 0; i < CHUNK; i++) outPcm[i] = alaw.decodeSample(alawBytes[o + i]!);
      sink += outPcm[0]!;
    }
  },
  'alaw decode table (256)': () => {
    for (let c = 0; c < CHUNKS; c++) {
      decodeInto('pcma', alawBytes.subarray(c * CHUNK, (c + 1) * CHUNK), outPcm);
      sink += outPcm[0]!;
    }
  },
  'alaw.encode (alawmulaw, allocates)': () => {
    for (let c = 0; c < CHUNKS; c++) sink += alaw.encode(pcm.subarray(c * CHUNK, (c + 1) * CHUNK))[0]!;
  },
  'alaw.encodeSample loop': () => {
    for (let c = 0; c < CHUNKS; c++) {
      const o = c * CHUNK;
      for (let i = 0; i < CHUNK; i++) outBytes[i] = alaw.encodeSample(pcm[o + i]!);
      sink += outBytes[0]!;
    }
  },
  'alaw encode table (64K)': () => {
    for (let c = 0; c < CHUNKS; c++) {
      encodeInto('pcma', pcm.subarray(c * CHUNK, (c + 1) * CHUNK), outBytes);
      sink += outBytes[0]!;
    }
  },
};

// Per-chunk (not per-sample) costs of the base64 path, 20 ms of 8 kHz PCM16 (320 bytes).
const slinChunk = Buffer.from(pcm.buffer, 0, CHUNK * 2);
const b64 = slinChunk.toString('base64');
const chunkCases: Record<string, Case> = {
  'base64 -> bytes -> Int16 view (fromBase64 + pcm16View)': () => {
    for (let c = 0; c < CHUNKS; c++) sink += pcm16View(fromBase64(b64))[0]!;
  },
  'Int16 -> base64 (toBase64)': () => {
    for (let c = 0; c < CHUNKS; c++) sink += toBase64(slinChunk).length;
  },
};

function time(fn: Case): number {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0);
}

function measure(fn: Case, per: number): { median: number; min: number; max: number } {
  for (let i = 0; i < 3; i++) fn(); // warm up to the optimizing tier
  const ns: number[] = [];
  for (let r = 0; r < ROUNDS; r++) ns.push(time(fn) / per);
  ns.sort((a, b) => a - b);
  return { median: ns[ROUNDS >> 1]!, min: ns[0]!, max: ns[ROUNDS - 1]! };
}

const results: Record<string, { median: number; min: number; max: number }> = {};
for (const [name, fn] of Object.entries(cases)) results[name] = measure(fn, CHUNK * CHUNKS);
const chunkResults: Record<string, { median: number; min: number; max: number }> = {};
for (const [name, fn] of Object.entries(chunkCases)) chunkResults[name] = measure(fn, CHUNKS);

const round = (v: number) => Math.round(v * 100) / 100;
if (process.argv.includes('--json')) {
  const nsPerSample = Object.fromEntries(
    Object.entries(results).map(([k, v]) => [
      k,
      { median: round(v.median), min: round(v.min), max: round(v.max) },
    ]),
  );
  const nsPerChunk = Object.fromEntries(
    Object.entries(chunkResults).map(([k, v]) => [
      k,
      { median: round(v.median), min: round(v.min), max: round(v.max) },
    ]),
  );
  console.log(JSON.stringify({ chunkSamples: CHUNK, rounds: ROUNDS, nsPerSample, nsPerChunk }));
} else {
  console.log(`ns per sample, ${CHUNK}-sample chunks, median (min-max) of ${ROUNDS} rounds`);
  for (const [k, v] of Object.entries(results)) {
    console.log(
      `  ${k.padEnd(40)} ${round(v.median).toFixed(2).padStart(7)}  (${round(v.min)}-${round(v.max)})`,
    );
  }
  console.log('ns per 20 ms chunk (320 bytes PCM16)');
  for (const [k, v] of Object.entries(chunkResults)) {
    console.log(`  ${k.padEnd(58)} ${Math.round(v.median).toString().padStart(6)}`);
  }
}
// Keep the tables reachable so the work above cannot be optimised away.
if (sink === 0.5 && MULAW_DECODE[0] === ALAW_DECODE[0] && MULAW_ENCODE[0] === ALAW_ENCODE[0]) console.log('');
