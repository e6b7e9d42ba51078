/**
 * A real bridge in a child process (`tsx src/cli/main.ts`), for tests that need several instances, must
 * SIGKILL one, or judge its timing from outside (its pauses then show in what the test receives). The
 * bound addresses are read from the start-up banner. Tests start one through the rig
 * (`startRig({ process: true })`, rig.ts), which gives it its defaults and peers.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BRIDGE_NODE_FLAGS } from '../../src/cli/node-flags.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface BridgeProcess {
  readonly http: string;
  readonly mediaUrl: string;
  /** The AudioSocket listener's address (`tcp://host:port`), where AUDIOSOCKET_PORT opened one. */
  readonly audioSocketUrl: string | undefined;
  readonly child: ChildProcess;
  /** What it wrote to stdout and stderr (for failure messages). */
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Spawns the bridge with `env` over this process's environment (and NODE_ENV=test, LOG_FORMAT=json), with
 * the V8 flags it runs with everywhere (src/cli/node-flags.ts): its pauses are then the ones it has in use.
 */
export async function spawnBridgeProcess(
  env: Record<string, string>,
  startTimeoutMs: number,
  /** Node options before the script (e.g. `--trace-gc`, to see the bridge's own collections in `output()`). */
  nodeArgs: readonly string[] = [],
): Promise<BridgeProcess> {
  const child = spawn(
    process.execPath,
    [...BRIDGE_NODE_FLAGS, ...nodeArgs, '--import', 'tsx', 'src/cli/main.ts'],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        // Tests read the bridge's log lines as JSON (the development default is pretty).
        LOG_FORMAT: 'json',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
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
      // The banner is one write; its AudioSocket line, where there is one, comes with the first.
      if (m?.[1] !== undefined && (env.AUDIOSOCKET_PORT === undefined || /AudioSocket listener/.test(out))) {
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
    audioSocketUrl: /AudioSocket listener \([^)]*\): (tcp:\/\/[0-9.]+:\d+)/.exec(out)?.[1],
    child,
    output: () => out,
    kill,
  };
}
