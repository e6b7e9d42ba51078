/**
 * Speech in noise for the noise suppressor's tests and bench: real recorded speech (the English prompts
 * of Debian's asterisk-core-sounds-en-wav, one speaker recorded at 8 kHz, installed by
 * scripts/install-test-deps.sh) with noise made here from a seed (pink noise, and babble: many other
 * prompts at once, each sped up or slowed down a little so they sound like several talkers), mixed at a
 * given SNR; and the measures the tests read: the delay by cross-correlation, the speech envelope's
 * correlation, the level of the noise-only stretches and how often an energy VAD fires in them.
 *
 * The clip: NOISE_LEAD_S of noise alone, SPEECH_PROMPTS spoken back to back, NOISE_TAIL_S of noise alone.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_VOICE_RULE, FULL_SCALE } from '../../src/audio/level.js';
import { decodeWav } from '../../src/audio/wav.js';
import { joined } from './audio.js';

export const SPEECH_DIR = '/usr/share/asterisk/sounds/en_US_f_Allison';
export const SPEECH_RATE = 8000;
/** The speech of the clip: about 5.4 s of one speaker. */
export const SPEECH_PROMPTS = ['cannot-complete-as-dialed.wav', 'something-terribly-wrong.wav'];
export const NOISE_LEAD_S = 1.5;
export const NOISE_TAIL_S = 1.2;
/** Talkers in the babble. */
export const BABBLE_TALKERS = 12;

/** Whether the recorded speech is installed. */
export function speechInstalled(): boolean {
  return SPEECH_PROMPTS.every((f) => existsSync(join(SPEECH_DIR, f)));
}

/**
 * Why the recorded speech cannot be used, for a test to fail with (CI must have it) or skip on (a
 * developer's machine without it): undefined when it is installed.
 */
export function speechMissing(): string | undefined {
  if (speechInstalled()) return undefined;
  return `no recorded speech in ${SPEECH_DIR} (scripts/install-test-deps.sh installs asterisk-core-sounds-en-wav)`;
}

const prompts = new Map<string, Int16Array>();

function prompt(file: string): Int16Array {
  let pcm = prompts.get(file);
  if (pcm === undefined) {
    pcm = decodeWav(readFileSync(join(SPEECH_DIR, file)), SPEECH_RATE);
    prompts.set(file, pcm);
  }
  return pcm;
}

/** Deterministic uniform numbers in [0, 1) from a seed (mulberry32). */
export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Pink (1/f) noise: white noise through Paul Kellet's filter, -3 dB an octave within 0.05 dB. */
export function pinkNoise(n: number, seed: number): Float64Array {
  const r = seeded(seed);
  const out = new Float64Array(n);
  let b0 = 0;
  let b1 = 0;
  let b2 = 0;
  let b3 = 0;
  let b4 = 0;
  let b5 = 0;
  let b6 = 0;
  for (let i = 0; i < n; i++) {
    const w = r() * 2 - 1;
    b0 = 0.99886 * b0 + w * 0.0555179;
    b1 = 0.99332 * b1 + w * 0.0750759;
    b2 = 0.969 * b2 + w * 0.153852;
    b3 = 0.8665 * b3 + w * 0.3104856;
    b4 = 0.55 * b4 + w * 0.5329522;
    b5 = -0.7616 * b5 - w * 0.016898;
    out[i] = b0 + b1 + b2 + b3 + b4 + b5 + b6 + w * 0.5362;
    b6 = w * 0.115926;
  }
  return out;
}

/**
 * Babble: `talkers` voices at once, each reading prompts other than the clip's one after another from
 * a random one, at 0.85-1.2x speed (which moves its pitch as much: a different voice).
 */
export function babble(n: number, seed: number, talkers = BABBLE_TALKERS): Float64Array {
  const r = seeded(seed);
  const pool = readdirSync(SPEECH_DIR)
    .filter((f) => f.endsWith('.wav') && !SPEECH_PROMPTS.includes(f))
    .sort();
  const out = new Float64Array(n);
  for (let k = 0; k < talkers; k++) {
    const speed = 0.85 + 0.35 * r();
    let source = prompt(pool[Math.floor(r() * pool.length)]!);
    let pos = Math.floor(r() * source.length);
    for (let i = 0; i < n; i++) {
      const j = Math.floor(pos);
      if (j + 1 >= source.length) {
        source = prompt(pool[Math.floor(r() * pool.length)]!);
        pos = 0;
        i--;
        continue;
      }
      const f = pos - j;
      out[i] = out[i]! + source[j]! * (1 - f) + source[j + 1]! * f;
      pos += speed;
    }
  }
  return out;
}

export type NoiseKind = 'pink' | 'babble';

export interface NoisySpeech {
  readonly rate: number;
  /** The clean clip (speech with silence around it). */
  readonly clean: Float64Array;
  /** The clip with noise. */
  readonly noisy: Int16Array;
  /** Where the speech is, in samples of `rate`. */
  readonly speechFrom: number;
  readonly speechTo: number;
}

let speechCache: Int16Array | undefined;

/** The clip's speech, 8 kHz. */
export function speech(): Int16Array {
  speechCache ??= sentence(SPEECH_PROMPTS);
  return speechCache;
}

/**
 * Other sentences for the caller, each two prompts back to back (5-8 s), for checks that the suppressor
 * does on speech it was not tuned on what it does on the clip's.
 */
export const OTHER_SENTENCES: readonly (readonly [string, string])[] = [
  ['agent-user.wav', 'conf-waitforleader.wav'],
  ['astcc-followed-by-the-pound-key.wav', 'confbridge-dec-list-vol-out.wav'],
  ['conf-kicked.wav', 'confbridge-participants.wav'],
];

/** Prompts spoken back to back, 8 kHz. */
export function sentence(files: readonly string[]): Int16Array {
  return joined(files.map(prompt));
}

/** Mean square over the 20 ms frames within 30 dB of the loudest: the speech's active level. */
export function activePower(x: ArrayLike<number>, from = 0, to = x.length, frame = 160): number {
  const powers: number[] = [];
  for (let i = from; i + frame <= to; i += frame) powers.push(meanSquare(x, i, i + frame));
  const loudest = Math.max(...powers);
  const active = powers.filter((p) => p > loudest / 1000);
  return active.reduce((t, p) => t + p, 0) / active.length;
}

export function meanSquare(x: ArrayLike<number>, from: number, to: number): number {
  let s = 0;
  for (let i = from; i < to; i++) s += x[i]! * x[i]!;
  return s / Math.max(1, to - from);
}

const clips = new Map<string, NoisySpeech>();

/** The clip with `kind` noise at `snrDb` (speech's active level over the noise's mean level). */
export function noisySpeech(kind: NoiseKind, snrDb: number, seed = 7): NoisySpeech {
  const key = `${kind} ${snrDb} ${seed}`;
  let clip = clips.get(key);
  if (clip === undefined) {
    clip = makeNoisySpeech(kind, snrDb, seed);
    clips.set(key, clip);
  }
  return clip;
}

function makeNoisySpeech(kind: NoiseKind, snrDb: number, seed: number): NoisySpeech {
  return withNoise(speech(), kind, snrDb, seed);
}

/** `s` (8 kHz) between NOISE_LEAD_S and NOISE_TAIL_S of silence, with `kind` noise at `snrDb`. */
export function withNoise(s: Int16Array, kind: NoiseKind, snrDb: number, seed = 7): NoisySpeech {
  const lead = Math.round(NOISE_LEAD_S * SPEECH_RATE);
  const n = lead + s.length + Math.round(NOISE_TAIL_S * SPEECH_RATE);
  const clean = new Float64Array(n);
  for (let i = 0; i < s.length; i++) clean[lead + i] = s[i]!;
  const noise = kind === 'pink' ? pinkNoise(n, seed) : babble(n, seed);
  const gain = Math.sqrt(activePower(s) / meanSquare(noise, 0, n) / 10 ** (snrDb / 10));
  const noisy = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    const v = Math.round(clean[i]! + gain * noise[i]!);
    noisy[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
  }
  return { rate: SPEECH_RATE, clean, noisy, speechFrom: lead, speechTo: lead + s.length };
}

/** `x` at `rate` -> `to` by linear interpolation: only for lining a reference up, never for listening. */
function stretch(x: ArrayLike<number>, from: number, to: number): Float64Array {
  const n = Math.floor((x.length * to) / from);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const p = (i * from) / to;
    const j = Math.floor(p);
    const f = p - j;
    out[i] = (x[j] ?? 0) * (1 - f) + (x[j + 1] ?? 0) * f;
  }
  return out;
}

/**
 * The lag (samples of `rate`) at which `heard` best matches the clean speech, by cross-correlation
 * over the speech, searched from 0 to `maxMs`: the audio's delay through whatever carried it.
 */
export function delaySamples(clip: NoisySpeech, heard: ArrayLike<number>, rate: number, maxMs = 60): number {
  const ref = rate === clip.rate ? clip.clean : stretch(clip.clean, clip.rate, rate);
  const from = Math.floor((clip.speechFrom * rate) / clip.rate);
  const to = Math.floor((clip.speechTo * rate) / clip.rate);
  let best = Number.NEGATIVE_INFINITY;
  let at = 0;
  for (let lag = 0; lag <= Math.round((maxMs * rate) / 1000); lag++) {
    let s = 0;
    for (let i = from; i < to; i++) s += ref[i]! * (heard[i + lag] ?? 0);
    if (s > best) {
      best = s;
      at = lag;
    }
  }
  return at;
}

/** 10 ms RMS frames of x[from..to). */
function envelope(x: ArrayLike<number>, from: number, to: number, frame: number): number[] {
  const e: number[] = [];
  for (let i = from; i + frame <= to; i += frame) e.push(Math.sqrt(meanSquare(x, i, i + frame)));
  return e;
}

function pearson(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let ma = 0;
  let mb = 0;
  for (let i = 0; i < n; i++) {
    ma += a[i]!;
    mb += b[i]!;
  }
  ma /= n;
  mb /= n;
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < n; i++) {
    ab += (a[i]! - ma) * (b[i]! - mb);
    aa += (a[i]! - ma) ** 2;
    bb += (b[i]! - mb) ** 2;
  }
  return ab / Math.sqrt(aa * bb);
}

/**
 * Where the clean clip has sound, in its samples: from the start of its first 10 ms frame within 60 dB
 * of its loudest to the end of its last.
 */
export function soundSpan(clip: NoisySpeech): [number, number] {
  const frame = clip.rate / 100;
  const e = envelope(clip.clean, 0, clip.clean.length, frame);
  const loudest = Math.max(...e);
  const first = e.findIndex((v) => v >= loudest / 1000);
  const last = e.findLastIndex((v) => v >= loudest / 1000);
  return [first * frame, (last + 1) * frame];
}

export interface Heard {
  /** The delay found by correlation, ms. */
  readonly delayMs: number;
  /** Correlation of the speech's 10 ms envelope with the clean speech's, over the speech. */
  readonly envelopeR: number;
  /** The speech's active level (activePower over the speech, 20 ms frames): kept, not only its shape. */
  readonly speechPower: number;
  /** Mean square of the noise-only stretches (after the first 0.5 s, clear of the speech's edges). */
  readonly noisePower: number;
  /** 20 ms frames of the noise-only stretches an energy VAD at the bridge's -40 dBFS calls voiced. */
  readonly vadFrames: number;
  /** Of how many. */
  readonly vadOf: number;
}

/** What a listener at `rate` heard of `clip`. */
export function measureHeard(clip: NoisySpeech, heard: ArrayLike<number>, rate: number): Heard {
  const lag = delaySamples(clip, heard, rate);
  const k = rate / clip.rate;
  const at = (i: number) => Math.floor(i * k) + lag;
  const frame10 = rate / 100;
  const from = at(clip.speechFrom);
  const to = at(clip.speechTo);
  const r = pearson(
    envelope(clip.clean, clip.speechFrom, clip.speechTo, clip.rate / 100),
    envelope(heard, from, to, frame10),
  );
  // Noise alone: 0.5 s after the start (a network state settles) to 0.1 s before the speech, and 0.2 s
  // after it to 0.1 s before the end. Where the speech starts and ends is read from the clean speech's
  // own envelope (a prompt's file has some silence at either end), never from what came out.
  const [first, last] = soundSpan(clip);
  const margin = (s: number) => Math.round(s * rate);
  const stretches: [number, number][] = [
    [margin(0.5), at(first) - margin(0.1)],
    [at(last) + margin(0.2), Math.min(heard.length, at(clip.clean.length)) - margin(0.1)],
  ];
  let sum = 0;
  let n = 0;
  let vad = 0;
  let frames = 0;
  const threshold = 10 ** (DEFAULT_VOICE_RULE.thresholdDbfs / 10) * FULL_SCALE * FULL_SCALE;
  const frame20 = rate / 50;
  for (const [a, b] of stretches) {
    sum += meanSquare(heard, a, b) * (b - a);
    n += b - a;
    for (let i = a; i + frame20 <= b; i += frame20) {
      frames++;
      if (meanSquare(heard, i, i + frame20) >= threshold) vad++;
    }
  }
  return {
    delayMs: (lag * 1000) / rate,
    envelopeR: r,
    speechPower: activePower(heard, from, to, frame20),
    noisePower: sum / n,
    vadFrames: vad,
    vadOf: frames,
  };
}

/** Decibels of a power ratio. */
export const db = (ratio: number): number => 10 * Math.log10(ratio);
