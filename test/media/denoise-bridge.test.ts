/**
 * Clean caller audio through the bridge: a real bridge, a provider sending recorded speech in pink noise
 * and in babble (at 5, 10 and 20 dB SNR) over a real WebSocket, and a recording bot measuring what it
 * got, for a tenant with `"denoise": true` and one without, inline and with a DSP worker. At the bot the
 * noise-only stretches (where the clean speech's own envelope has no sound) must be at least 15 dB
 * quieter with the suppressor, pink noise and babble (a dozen talkers: RNNoise keeps them as speech, the
 * residual gate after it takes them down) alike, the speech's envelope must keep a correlation >= 0.9
 * with the clean speech's, an energy VAD (the bridge's -40 dBFS) must fire far less on the noise-only
 * stretches, and the delay added (by correlation) must be at most 20 ms; docs/denoise.md has the
 * figures. The caller's recording keeps the line as carried: the noisy audio, byte for byte.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BotConnection } from '../helpers/bot.js';
import { skipUnlessCI } from '../helpers/needs.js';
import {
  db,
  type Heard,
  measureHeard,
  type NoiseKind,
  type NoisySpeech,
  noisySpeech,
  speechMissing,
} from '../helpers/noisy-speech.js';
import { TestProvider } from '../helpers/provider.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

const missing = skipUnlessCI('test/media/denoise-bridge.test.ts', speechMissing());

const BOT_RATE = 16000;
const SECRET = 'denoise-test-secret';
const recordings = mkdtempSync(join(tmpdir(), 'vb-denoise-'));
afterAll(() => rmSync(recordings, { recursive: true, force: true }));

async function register(rig: InProcessRig, tenant: string, body: Record<string, unknown>) {
  const res = await fetch(`${rig.http}/v1/media-stream`, {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${await rig.restToken(['media:manage'], tenant)}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ media_ws_url: 'wss://example.test/media', media_secret: SECRET, ...body }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

/** One call of `tenant` carrying `clip`, sent as 20 ms chunks as fast as the socket takes them. */
async function place(
  rig: InProcessRig,
  tenant: string,
  id: string,
  clip: NoisySpeech,
): Promise<BotConnection> {
  const provider = new TestProvider(rig.mediaUrl, {
    token: await rig.mediaToken({ tenant, secret: SECRET }),
  });
  await provider.start(id);
  await waitFor(
    () => rig.bot!.connections.some((c) => c.sessionStart?.session_id === id),
    10_000,
    `the bot to get ${id}`,
  );
  const bot = rig.bot!.connections.find((c) => c.sessionStart?.session_id === id)!;
  const pcm = Buffer.from(clip.noisy.buffer, clip.noisy.byteOffset, clip.noisy.byteLength);
  for (let i = 0; i < pcm.length; i += 320) {
    provider.ws.send(pcm.subarray(i, i + 320));
    if (i % (320 * 50) === 0) await new Promise((r) => setImmediate(r));
  }
  // All of it at the bot: the suppressor holds back one frame and its filters' delay (~15 ms).
  const expected = (clip.noisy.length * 2 * BOT_RATE) / clip.rate;
  await waitFor(() => bot.audioBytesSoFar >= expected - 1024, 20_000, `${id}'s audio at the bot`);
  provider.ws.close();
  await provider.waitClosed();
  return bot;
}

function heardBy(bot: BotConnection): Int16Array {
  const bytes = bot.audioBytes();
  return new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + (bytes.length & ~1)));
}

interface Row {
  kind: NoiseKind;
  snr: number;
  with: Heard;
  without: Heard;
  bytes: Int16Array;
}

const byMode = new Map<string, Row[]>();

describe.skipIf(missing !== undefined)('clean caller audio through the bridge', () => {
  for (const workers of [0, 1]) {
    const mode = workers === 0 ? 'inline' : 'one DSP worker';
    it(`denoises the caller for the bot, ${mode}`, { timeout: 120_000 }, async () => {
      await using rig = await startRig({
        bot: { echo: false },
        env: {
          DSP_WORKERS: String(workers),
          BOT_SAMPLE_RATE: String(BOT_RATE),
          RECORDINGS_DIR: join(recordings, mode.replace(/ /g, '-')),
        },
      });
      const shown = await register(rig, 'clean', { denoise: true, recording: true });
      expect(shown.denoise).toBe(true);
      expect((await register(rig, 'plain', {})).denoise).toBe(false);
      const rows: Row[] = [];

      for (const kind of ['pink', 'babble'] as const) {
        for (const snr of [5, 10, 20]) {
          const clip = noisySpeech(kind, snr);
          const cleaned = heardBy(await place(rig, 'clean', `c-${kind}-${snr}`, clip));
          const plain = heardBy(await place(rig, 'plain', `p-${kind}-${snr}`, clip));
          rows.push({
            kind,
            snr,
            with: measureHeard(clip, cleaned, BOT_RATE),
            without: measureHeard(clip, plain, BOT_RATE),
            bytes: cleaned,
          });
        }
      }
      byMode.set(mode, rows);
      for (const r of rows) {
        const reduction = db(r.without.noisePower / r.with.noisePower);
        console.log(
          `${mode}, ${r.kind} at ${r.snr} dB SNR: noise-only ${reduction.toFixed(1)} dB quieter; envelope r ` +
            `${r.with.envelopeR.toFixed(3)} (${r.without.envelopeR.toFixed(3)} without); speech level ` +
            `${db(r.with.speechPower / r.without.speechPower).toFixed(1)} dB; VAD on noise-only ` +
            `${r.with.vadFrames}/${r.with.vadOf} frames (${r.without.vadFrames} without); delay ` +
            `${r.with.delayMs.toFixed(2)} ms (${r.without.delayMs.toFixed(2)} without)`,
        );
        expect(r.with.delayMs - r.without.delayMs).toBeLessThanOrEqual(20);
        expect(r.with.delayMs - r.without.delayMs).toBeGreaterThan(5);
        expect(r.with.envelopeR).toBeGreaterThanOrEqual(0.9);
        // Kept at its level too: a correlation does not see a gain that turns everything down.
        expect(Math.abs(db(r.with.speechPower / r.without.speechPower))).toBeLessThanOrEqual(3);
        expect(reduction).toBeGreaterThanOrEqual(15);
        // Pink noise leaves nothing for the VAD; babble, speech itself, a few frames where it is loudest.
        expect(r.with.vadFrames).toBeLessThanOrEqual(r.without.vadFrames / (r.kind === 'pink' ? 10 : 3));
      }

      // The recording keeps the line as carried: the caller's channel is the noisy audio itself.
      const token = await rig.restToken(['recordings:read'], 'clean');
      const auth = { authorization: `Bearer ${token}` };
      let listed: { recording_id: string; in_progress?: boolean }[] = [];
      await waitFor(
        async () => {
          const res = await fetch(`${rig.http}/v1/recordings?session_id=c-pink-5`, { headers: auth });
          listed = (await res.json()) as typeof listed;
          return listed.length === 1 && listed[0]!.in_progress !== true;
        },
        10_000,
        'the recording of c-pink-5',
      );
      const wav = await download(`${rig.http}/v1/recordings/${listed[0]!.recording_id}`, auth);
      const left = leftChannel(wav);
      const sent = noisySpeech('pink', 5).noisy;
      // The file starts when the call does; the caller's audio starts where its first chunk came.
      const from = left.findIndex((_, i) => i + sent.length <= left.length && startsAt(left, sent, i));
      expect(from).toBeGreaterThanOrEqual(0);
      expect(from).toBeLessThan(8000);
      let same = 0;
      for (let i = 0; i < sent.length; i++) if (left[from + i] === sent[i]) same++;
      expect(same).toBe(sent.length);
    });
  }

  it('gives the bot the same bytes inline and with a worker', () => {
    const a = byMode.get('inline');
    const b = byMode.get('one DSP worker');
    if (a === undefined || b === undefined) return expect.fail('both modes must have run');
    for (let i = 0; i < a.length; i++) {
      const x = a[i]!.bytes;
      const y = b[i]!.bytes;
      expect(y.length).toBe(x.length);
      let same = 0;
      for (let k = 0; k < x.length; k++) if (x[k] === y[k]) same++;
      expect(same, `${a[i]!.kind} at ${a[i]!.snr} dB`).toBe(x.length);
    }
  });
});

/**
 * A GET on a connection of its own, closed after the answer: a kept-alive connection that has carried a
 * recording's file stream held the bridge's close for its keep-alive timeout (72 s) here.
 */
function download(url: string, headers: Record<string, string>): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    get(url, { headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(Buffer.concat(parts)) : reject(new Error(`${res.statusCode}`)),
      );
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** Whether `x` has the first 160 samples of `part` at `i`. */
function startsAt(x: Int16Array, part: Int16Array, i: number): boolean {
  for (let k = 0; k < 160; k++) if (x[i + k] !== part[k]) return false;
  return true;
}

/** The left channel of a stereo 16-bit WAV (the recorder's: caller left, bot right). */
function leftChannel(wav: Buffer): Int16Array {
  const data = wav.indexOf('data');
  const size = wav.readUInt32LE(data + 4);
  const pcm = new Int16Array(wav.buffer.slice(wav.byteOffset + data + 8, wav.byteOffset + data + 8 + size));
  const out = new Int16Array(pcm.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = pcm[2 * i]!;
  return out;
}
