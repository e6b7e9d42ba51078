/**
 * A real bridge in a child process (`tsx src/cli/main.ts`), for tests that need several instances or
 * must SIGKILL one. The bound address is read from the start-up banner. Tests start one through the rig
 * (`startRig({ process: true })`, rig.ts), which gives it its defaults and peers.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface BridgeProcess {
  readonly http: string;
  readonly mediaUrl: string;
  readonly child: ChildProcess;
  /** What it wrote to stdout and stderr (for failure messages). */
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Spawns the bridge with `env` over this process's environment (and NODE_ENV=test, LOG_FORMAT=json). */
export async function spawnBridgeProcess(
  env: Record<string, string>,
  startTimeoutMs: number,
): Promise<BridgeProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      // Tests read the bridge's log lines as JSON (the development default is pretty).
      LOG_FORMAT: 'json',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const cap = (d: Buffer) => {
    out += d.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout?.on('data', cap);
  child.stderr?.on('data', cap);
  const kill = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(t);
  };
  const http = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`bridge did not start:\n${out}`)), startTimeoutMs);
    const onData = () => {
      const m = /voicebridge listening on (http:\/\/[0-9.]+:\d+)/.exec(out);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolve(m[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`bridge exited with ${code} before listening:\n${out}`));
    });
  }).catch(async (err: unknown) => {
    await kill('SIGKILL');
    throw err;
  });
  return {
    http,
    mediaUrl: `${http.replace('http', 'ws')}/v1/media`,
    child,
    output: () => out,
    kill,
  };
}
