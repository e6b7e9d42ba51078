/** `npm run load`: the bare echo of `--against-echo`, at once or held `--echo-delay-ms`. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const load = (...args: string[]) =>
  run(process.execPath, ['--import', 'tsx', 'src/cli/load.ts', ...args], { timeout: 60_000 });

describe('npm run load', () => {
  it('--against-echo --echo-delay-ms holds every frame that long, and reports it as JSON', async () => {
    const { stdout } = await load(
      '--against-echo',
      '--echo-delay-ms',
      '120',
      '--calls',
      '3',
      '--seconds',
      '2',
      '--marker-every-ms',
      '400',
      '--json',
      '-',
    );
    const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as {
      connected: number;
      markers: { sent: number; lost: number };
      roundTripMs: { p50: number };
    };
    expect(report.connected).toBe(3);
    expect(report.markers.sent).toBeGreaterThan(0);
    expect(report.markers.lost).toBe(0);
    expect(report.roundTripMs.p50).toBeGreaterThanOrEqual(120);
    expect(report.roundTripMs.p50).toBeLessThan(160);
  });

  it('refuses --echo-delay-ms without --against-echo, naming both', async () => {
    const err = await load('--url', 'ws://127.0.0.1:9/v1/media', '--echo-delay-ms', '100').then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err?.code).toBe(2);
    expect(err?.stderr).toContain('--echo-delay-ms sets the bare echo of --against-echo');
  });
});
