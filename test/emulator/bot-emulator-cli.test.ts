/** `npm run bot-emulator`'s entry point in a child process: each dialect through it, and its flag errors. */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { quietFor, waitFor } from '../helpers/wait.js';

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

const quiet = ['--port', '0', '--log-level', 'silent'];

describe('npm run bot-emulator', () => {
  it('--dialect elevenlabs-agent: a private agent reached by the signed URL its key gets, replying with the set length', async () => {
    const out = await run(
      ['--dialect', 'elevenlabs-agent', ...quiet, '--api-key', 'xi-cli', '--reply-ms', '300', '--private'],
      (o) => /control API/.test(o),
    );
    const signing = /signed URL: GET (http:\/\/\S+)/.exec(out)![1]!;
    const plain = /WebSocket: (ws:\/\/\S+)/.exec(out)![1]!;
    expect(plain).toMatch(/agent_id=agent_standin$/);
    const refused = new WebSocket(plain);
    expect(
      await new Promise((r) => refused.once('unexpected-response', (_q, res) => r(res.statusCode))),
    ).toBe(403);
    expect((await fetch(signing, { headers: { 'xi-api-key': 'xi-other' } })).status).toBe(401);
    const { signed_url } = (await (await fetch(signing, { headers: { 'xi-api-key': 'xi-cli' } })).json()) as {
      signed_url: string;
    };
    const ws = new WebSocket(signed_url);
    let bytes = 0;
    ws.on('message', (d) => {
      const m = JSON.parse(String(d)) as { type: string; audio_event?: { audio_base_64: string } };
      if (m.type === 'audio') bytes += Buffer.from(m.audio_event!.audio_base_64, 'base64').length;
    });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'conversation_initiation_client_data' }));
    ws.send(JSON.stringify({ type: 'user_message', text: 'hello' }));
    await waitFor(() => bytes >= 16000 * 0.3 * 2, 5000, '300 ms of reply audio');
    await quietFor(300, 'no more reply audio');
    expect(bytes).toBe(16000 * 0.3 * 2);
    const base = /listening on (http:\/\/\S+)/.exec(out)![1]!;
    const list = (await (await fetch(`${base}/emulator/elevenlabs-agent/sessions`)).json()) as {
      sessions: { target: string; texts: { text: string }[] }[];
    };
    expect(list.sessions).toMatchObject([{ target: 'agent_standin', texts: [{ text: 'hello' }] }]);
    ws.close();
  });

  it('--dialect ultravox: creates a call with the key and greets on its joinUrl at the output rate', async () => {
    const out = await run(
      ['--dialect', 'ultravox', ...quiet, '--api-key', 'uv-cli', '--reply-ms', '200'],
      (o) => /control API/.test(o),
    );
    const base = /listening on (http:\/\/\S+)/.exec(out)![1]!;
    const res = await fetch(`${base}/api/calls`, {
      method: 'POST',
      headers: { 'X-API-Key': 'uv-cli' },
      body: JSON.stringify({
        medium: { serverWebSocket: { inputSampleRate: 8000, outputSampleRate: 16000 } },
      }),
    });
    expect(res.status).toBe(201);
    const ws = new WebSocket(((await res.json()) as { joinUrl: string }).joinUrl);
    let bytes = 0;
    ws.on('message', (d, binary) => {
      if (binary) bytes += (d as Buffer).length;
    });
    await waitFor(() => bytes >= 16000 * 0.2 * 2, 5000, '200 ms of greeting');
    await quietFor(300, 'no more greeting audio');
    expect(bytes).toBe(16000 * 0.2 * 2);
    ws.close();
  });

  it('refuses bad flags naming the flag and what it accepts', async () => {
    await expect(run(['--port', '0'], () => false)).rejects.toThrow(
      /exited with 2[\s\S]*--dialect is required/,
    );
    await expect(run(['--dialect', 'nope'], () => false)).rejects.toThrow(
      /--dialect must be one of elevenlabs-agent, ultravox, got nope/,
    );
    await expect(
      run(['--dialect', 'elevenlabs-agent', '--input-format', 'pcm_11'], () => false),
    ).rejects.toThrow(/--input-format must be one of pcm_8000, .*ulaw_8000, got pcm_11/);
    await expect(run(['--dialect', 'ultravox', '--agent-id', 'x'], () => false)).rejects.toThrow(
      /Unknown option '--agent-id'/,
    );
  });
});
