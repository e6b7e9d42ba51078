/** `npm run realtime-emulator`'s entry point in a child process: its flags, and a session through it. */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { waitFor } from '../helpers/wait.js';

let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill('SIGTERM');
  child = undefined;
});

/** Starts the CLI; resolves with its output once `done` holds for it, rejects when it exits first. */
function run(args: string[], done: (out: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['--import', 'tsx', 'src/cli/realtime-emulator.ts', ...args], {
      stdio: 'pipe',
    });
    child = c;
    let out = '';
    const timer = setTimeout(() => reject(new Error(`realtime-emulator did not start: ${out}`)), 20_000);
    const onData = (d: Buffer) => {
      out += String(d);
      if (done(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    };
    c.stdout?.on('data', onData);
    c.stderr?.on('data', (d: Buffer) => {
      out += String(d);
    });
    c.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`realtime-emulator exited with ${code}: ${out}`));
    });
  });
}

describe('npm run realtime-emulator', () => {
  it('serves sessions with the given key and reply length, and lists them on the control API', async () => {
    const out = await run(
      [
        '--port',
        '0',
        '--api-key',
        'sk-cli',
        '--reply-ms',
        '300',
        '--output-rate-factor',
        '0',
        '--log-level',
        'silent',
      ],
      (o) => /control API/.test(o),
    );
    const base = /listening on (http:\/\/\S+)/.exec(out)![1]!;
    const wsUrl = /WebSocket: (ws:\/\/\S+)/.exec(out)![1]!;
    const ws = new WebSocket(wsUrl, { headers: { Authorization: 'Bearer sk-cli' } });
    const types: string[] = [];
    let bytes = 0;
    ws.on('message', (d) => {
      const e = JSON.parse(String(d)) as { type: string; delta?: string };
      types.push(e.type);
      if (e.type === 'response.output_audio.delta') bytes += Buffer.from(e.delta!, 'base64').length;
    });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'response.create' }));
    await waitFor(() => types.includes('response.done'), 5000, 'response.done');
    expect(bytes).toBe(24000 * 0.3 * 2);
    const list = (await (await fetch(`${base}/emulator/realtime/sessions`)).json()) as {
      sessions: { model: string }[];
    };
    expect(list.sessions).toMatchObject([{ model: 'gpt-realtime' }]);
    ws.close();
    const refused = new WebSocket(wsUrl, { headers: { Authorization: 'Bearer sk-other' } });
    const status = await new Promise((r) =>
      refused.once('unexpected-response', (_req, res) => r(res.statusCode)),
    );
    expect(status).toBe(401);
  });

  it('refuses bad flags naming the flag and what it accepts', async () => {
    await expect(run(['--port', '0', '--reply-ms', 'long'], () => false)).rejects.toThrow(
      /exited with 2[\s\S]*--reply-ms must be an integer from 0 to 600000, got long/,
    );
    await expect(run(['--port', '0', '--tls-cert', 'x.pem'], () => false)).rejects.toThrow(
      /--tls-cert and --tls-key go together/,
    );
  });
});
