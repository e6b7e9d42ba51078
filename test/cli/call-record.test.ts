/**
 * `npm run call -- --record out.wav`: the call as the caller had it, a stereo WAV at the caller's rate,
 * what it sent left and what it heard right, measured: both the tone, the right one the echo's delay later.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import wavefile from 'wavefile';
import { fitTone } from '../../src/audio/tone.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/call.ts', ...args],
      { timeout: 30_000 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

let rig: InProcessRig | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await rig?.close();
  rig = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const onset = (x: Int16Array) => x.findIndex((v) => Math.abs(v) > 2000);

describe('npm run call -- --record', () => {
  it.each([
    { rate: 8000, outputRate: 8000 },
    { rate: 16000, outputRate: 8000 },
  ])(
    'saves sent left and heard right at the caller rate ($rate Hz in, $outputRate Hz back)',
    async ({ rate, outputRate }) => {
      rig = await startRig({ env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '200' } });
      const dir = mkdtempSync(join(tmpdir(), 'vb-callrec-'));
      dirs.push(dir);
      const out = join(dir, 'out.wav');
      const r = await run([
        '--url',
        rig.mediaUrl,
        '--audio',
        'tone:440',
        '--seconds',
        '2',
        '--rate',
        String(rate),
        '--output-rate',
        String(outputRate),
        '--record',
        out,
        '--json',
      ]);
      expect(r.code, r.stderr).toBe(0);
      const report = JSON.parse(r.stdout);
      expect(report.recorded).toMatchObject({ path: out, sampleRate: rate });

      const wav = new wavefile.WaveFile(readFileSync(out));
      const fmt = wav.fmt as { numChannels: number; sampleRate: number; bitsPerSample: number };
      expect(fmt).toMatchObject({ numChannels: 2, sampleRate: rate, bitsPerSample: 16 });
      const [left, right] = wav.getSamples(false, Int16Array) as unknown as Int16Array[];
      expect(report.recorded.seconds).toBeCloseTo(left!.length / rate, 6);
      const l0 = onset(left!);
      const r0 = onset(right!);
      const window = (x: Int16Array, at: number) => x.subarray(at + rate / 20, at + (rate * 3) / 2);
      const snrL = fitTone(window(left!, l0), 440, rate).snrDb;
      const snrR = fitTone(window(right!, r0), 440, rate).snrDb;
      const lagMs = ((r0 - l0) * 1000) / rate;
      console.log(
        `call --record ${rate}/${outputRate}: left ${snrL.toFixed(1)} dB, right ${snrR.toFixed(1)} dB, lag ${lagMs.toFixed(0)} ms`,
      );
      expect(snrL).toBeGreaterThanOrEqual(30);
      expect(snrR).toBeGreaterThanOrEqual(30);
      // What came back is heard after the echo's 200 ms (plus the provider's playout and the network).
      expect(lagMs).toBeGreaterThan(150);
      expect(lagMs).toBeLessThan(600);
    },
  );

  it('fails the command, saying why, when the file cannot be written', async () => {
    rig = await startRig({ env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0' } });
    const r = await run(['--url', rig.mediaUrl, '--seconds', '0.5', '--record', '/nonexistent-dir/out.wav']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/recording \/nonexistent-dir\/out\.wav stopped early: ENOENT/);
  });
});
