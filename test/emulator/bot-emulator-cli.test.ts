/** `npm run bot-emulator`'s entry point in a child process: each stand-in through it, and its flag errors. */
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

  it('--dialect gemini-live serves a session with the given key, connection life and frames', async () => {
    const out = await run(
      [
        '--dialect',
        'gemini-live',
        ...quiet,
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
      ['--dialect', 'deepgram-agent', ...quiet, '--api-key', 'dg-key', '--idle-timeout-ms', '300'],
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

  it('refuses a missing or unknown dialect and bad flags, naming the flag and what it accepts', async () => {
    await expect(run(['--port', '0'], () => false)).rejects.toThrow(
      /exited with 2[\s\S]*--dialect is required/,
    );
    await expect(run(['--dialect', 'nope'], () => false)).rejects.toThrow(
      /--dialect must be one of openai-realtime, elevenlabs-agent, ultravox, gemini-live, deepgram-agent, got nope/,
    );
    await expect(
      run(['--dialect', 'elevenlabs-agent', '--input-format', 'pcm_11'], () => false),
    ).rejects.toThrow(/--input-format must be one of pcm_8000, .*ulaw_8000, got pcm_11/);
    await expect(
      run(['--dialect', 'elevenlabs-agent', '--reply-turn-after-interruption', 'later'], () => false),
    ).rejects.toThrow(/--reply-turn-after-interruption must be same or next, got later/);
    await expect(
      run(['--dialect', 'elevenlabs-agent', '--interruption-event-id', 'new'], () => false),
    ).rejects.toThrow(/--interruption-event-id must be turn or cut, got new/);
    // A stand-in's flags are its own: another's is unknown to it.
    await expect(run(['--dialect', 'ultravox', '--agent-id', 'x'], () => false)).rejects.toThrow(
      /Unknown option '--agent-id'/,
    );
    await expect(
      run(['--dialect', 'openai-realtime', '--turn-silence-ms', '300'], () => false),
    ).rejects.toThrow(/Unknown option '--turn-silence-ms'/);
    await expect(run(['--dialect', 'ultravox', '--turn-silence-ms', '10'], () => false)).rejects.toThrow(
      /--turn-silence-ms must be an integer from 50 to 10000, got 10/,
    );
    await expect(run(['--dialect', 'gemini-live', '--json-frames', 'xml'], () => false)).rejects.toThrow(
      /--json-frames must be binary or text, got xml/,
    );
    await expect(
      run(['--dialect', 'deepgram-agent', '--idle-timeout-ms', 'soon'], () => false),
    ).rejects.toThrow(/--idle-timeout-ms must be an integer from 0 to 3600000, got soon/);
  });

  it('--help lists every stand-in with its port and its own flags', async () => {
    const out = await new Promise<string>((resolve) => {
      const c = spawn(process.execPath, ['--import', 'tsx', 'src/cli/bot-emulator.ts', '--help'], {
        stdio: 'pipe',
      });
      let text = '';
      c.stdout.on('data', (d: Buffer) => {
        text += String(d);
      });
      c.on('exit', () => resolve(text));
    });
    for (const [name, port, flag] of [
      ['openai-realtime', 9191, '--delta-ms'],
      ['elevenlabs-agent', 9292, '--reply-turn-after-interruption'],
      ['ultravox', 9393, '--chunk-ms'],
      ['gemini-live', 9494, '--refuse-resume-while-open'],
      ['deepgram-agent', 9595, '--idle-timeout-ms'],
    ] as const) {
      expect(out).toContain(`${port} (${name})`);
      const section = out.slice(out.indexOf(`--dialect ${name}:`)).split(/\n--dialect /)[0]!;
      expect(section).toContain(flag);
    }
  });
});
