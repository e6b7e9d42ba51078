/**
 * `npm run emulator`'s entry point (`tsx src/cli/emulator.ts`) in a child process, for the CLI tests.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach } from 'vitest';

/**
 * Registers an afterEach that stops the emulator a test started; returns the start function: it resolves
 * with what `ready` makes of the output once `ready` returns something, and rejects when the emulator
 * exits first or has not started within 20 s.
 */
export function useEmulatorCli(): (
  args: string[],
  ready: (out: string) => string | undefined,
) => Promise<string> {
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill('SIGTERM');
    child = undefined;
  });
  return (args, ready) =>
    new Promise((resolve, reject) => {
      const c = spawn(process.execPath, ['--import', 'tsx', 'src/cli/emulator.ts', ...args], {
        stdio: 'pipe',
      });
      child = c;
      let out = '';
      const timer = setTimeout(() => reject(new Error(`emulator did not start: ${out}`)), 20_000);
      c.stdout?.on('data', (d) => {
        out += String(d);
        const started = ready(out);
        if (started !== undefined) {
          clearTimeout(timer);
          resolve(started);
        }
      });
      c.stderr?.on('data', (d) => {
        out += String(d);
      });
      c.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`emulator exited with ${code}: ${out}`));
      });
    });
}
