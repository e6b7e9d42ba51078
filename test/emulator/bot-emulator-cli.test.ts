/** `npm run bot-emulator`'s entry point in a child process: each dialect's flags, and a session through it. */
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
    const c = spawn(process.execPath, ['--import', 'tsx', 'src/cli/bot-emulator.ts', ...args], {
      stdio: 'pipe',
    });
    child = c;
    let out = '';
    const timer = setTimeout(() => reject(new Error(`bot-emulator did not start: ${out}`)), 20_000);
    c.stdout?.on('data', (d: Buffer) => {
      out += String(d);
      if (done(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    });
    c.stderr?.on('data', (d: Buffer) => {
      out += String(d);
    });
    c.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`bot-emulator exited with ${code}: ${out}`));
    });
  });
}

const QUIET = ['--port', '0', '--log-level', 'silent'];

describe('npm run bot-emulator', () => {
  it('--dialect gemini-live serves a session with the given key, connection life and frames', async () => {
    const out = await run(
      [
        '--dialect',
        'gemini-live',
        ...QUIET,
        '--api-key',
        'g-key',
        '--reply-ms',
        '200',
        '--json-frames',
        'text',
        '--connection-ms',
        '1500',
        '--go-away-lead-ms',
        '500',
      ],
      (o) => /control API/.test(o),
    );
    const wsUrl = /WebSocket: (ws:\/\/\S+)/.exec(out)![1]!;
    expect(wsUrl).toMatch(/BidiGenerateContent\?key=g-key$/);
    const ws = new WebSocket(wsUrl);
    const got: Record<string, unknown>[] = [];
    const binary: boolean[] = [];
    ws.on('message', (d, isBinary) => {
      binary.push(isBinary);
      got.push(JSON.parse(String(d)));
    });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ setup: { model: 'models/m' } }));
    ws.send(JSON.stringify({ realtimeInput: { text: 'hello' } }));
    await waitFor(() => got.some((m) => 'goAway' in m), 5000, 'goAway');
    expect(got.find((m) => 'goAway' in m)).toEqual({ goAway: { timeLeft: '0.500s' } });
    const audio = got.flatMap((m) => {
      const parts = (m.serverContent as { modelTurn?: { parts: { inlineData: { data: string } }[] } })
        ?.modelTurn?.parts;
      return parts?.map((p) => Buffer.from(p.inlineData.data, 'base64').length) ?? [];
    });
    expect(audio.reduce((a, b) => a + b, 0)).toBe(24000 * 0.2 * 2);
    expect(binary.every((b) => !b)).toBe(true);
    const closed = await new Promise<number>((r) => ws.once('close', (code) => r(code)));
    expect(closed).toBe(1011);
  });

  it('--dialect deepgram-agent serves a session with the given key and idle timeout', async () => {
    const out = await run(
      ['--dialect', 'deepgram-agent', ...QUIET, '--api-key', 'dg-key', '--idle-timeout-ms', '300'],
      (o) => /control API/.test(o),
    );
    const wsUrl = /WebSocket: (ws:\/\/\S+)/.exec(out)![1]!;
    const refused = new WebSocket(wsUrl, { headers: { Authorization: 'Token other' } });
    const status = await new Promise((r) =>
      refused.once('unexpected-response', (_req, res) => r(res.statusCode)),
    );
    expect(status).toBe(401);
    const ws = new WebSocket(wsUrl, { headers: { Authorization: 'Token dg-key' } });
    const types: string[] = [];
    ws.on('message', (d, isBinary) =>
      types.push(isBinary ? 'audio' : (JSON.parse(String(d)) as { type: string }).type),
    );
    let closed: number | undefined;
    ws.once('close', (code) => {
      closed = code;
    });
    await new Promise((r) => ws.once('open', r));
    // The 300 ms idle timeout, not Deepgram's 10 s.
    await waitFor(() => closed !== undefined, 3000, 'the idle close');
    expect(closed).toBe(1011);
    expect(types).toEqual(['Welcome', 'Error']);
  });

  it('refuses a missing or unknown dialect and bad flags, naming what it accepts', async () => {
    await expect(run(['--port', '0'], () => false)).rejects.toThrow(
      /exited with 2[\s\S]*--dialect is required/,
    );
    await expect(run(['--dialect', 'nova'], () => false)).rejects.toThrow(
      /--dialect must be one of openai-realtime, gemini-live, deepgram-agent, got nova/,
    );
    await expect(run(['--dialect', 'gemini-live', '--json-frames', 'xml'], () => false)).rejects.toThrow(
      /--json-frames must be binary or text, got xml/,
    );
    await expect(
      run(['--dialect', 'deepgram-agent', '--idle-timeout-ms', 'soon'], () => false),
    ).rejects.toThrow(/--idle-timeout-ms must be an integer from 0 to 3600000, got soon/);
  });
});
