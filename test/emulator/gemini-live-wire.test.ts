/**
 * The Gemini Live stand-in over raw `ws`, for what Google's client never does or hides: JSON in binary
 * frames, closes with 1007/1008 and Google's wording for a bad setup or message, messages before
 * `setupComplete` noted, turns marked by activityStart/End, the connection's life ending in goAway then
 * a 1011 close, resumption refused for an unknown handle or (when set so) while the old connection is
 * open, and the control API's go-away and malformed-frame hooks.
 */
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { generateTone } from '../../src/audio/tone.js';
import { createGeminiLiveEmulator, type GeminiLiveEmulator } from '../../src/emulator/gemini-live/server.js';
import { pcmBytes } from '../helpers/s2s.js';
import { waitFor } from '../helpers/wait.js';

let emulator: GeminiLiveEmulator | undefined;
const clients: WebSocket[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  await emulator?.close();
  emulator = undefined;
});

interface Raw {
  ws: WebSocket;
  messages: Record<string, unknown>[];
  binary: boolean[];
  closed: Promise<{ code: number; reason: string }>;
  send(m: unknown): void;
  has(key: string): boolean;
}

async function start(options: Parameters<typeof createGeminiLiveEmulator>[0] = {}): Promise<void> {
  emulator = createGeminiLiveEmulator(options);
  await emulator.listen(0);
}

async function open(): Promise<Raw> {
  const ws = new WebSocket(emulator!.wsUrl());
  clients.push(ws);
  const r: Raw = {
    ws,
    messages: [],
    binary: [],
    closed: new Promise((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
    ),
    send: (m) => ws.send(JSON.stringify(m)),
    has: (key) =>
      r.messages.some((m) => key in m || (m.serverContent as Record<string, unknown>)?.[key] !== undefined),
  };
  ws.on('message', (d, isBinary) => {
    r.binary.push(isBinary);
    r.messages.push(JSON.parse(String(d)));
  });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return r;
}

const SETUP = { setup: { model: 'models/gemini-live-2.5-flash-preview' } };

function audio(pcm: Int16Array): unknown {
  return {
    realtimeInput: { audio: { data: pcmBytes(pcm).toString('base64'), mimeType: 'audio/pcm;rate=16000' } },
  };
}

describe('Gemini Live stand-in on the wire', () => {
  it('sends its JSON in binary frames by default and in text frames when told; takes snake_case field names', async () => {
    await start({ replyMs: 100, outputRateFactor: 0 });
    const c = await open();
    c.send({ setup: { model: 'models/m', system_instruction: { parts: [{ text: 'reply_ms=200' }] } } });
    c.send({ realtime_input: { text: 'hi' } });
    await waitFor(() => c.has('turnComplete'), 2000, 'turnComplete');
    expect(c.binary.every((b) => b)).toBe(true);
    expect(emulator!.sessions()[0]!.record.replies[0]!.planned_ms).toBe(200);
    await emulator!.close();
    await start({ jsonFrames: 'text' });
    const t = await open();
    t.send(SETUP);
    await waitFor(() => t.has('setupComplete'), 2000, 'setupComplete');
    expect(t.binary).toEqual([false]);
  });

  it.each([
    [{ realtimeInput: { text: 'first' } }, 1007, 'the first message must be setup'],
    [{ setup: { model: 'models/m', temperature: 0.5 } }, 1007, 'Unknown name "temperature" at \'setup\''],
    [{ setup: { model: 'gemini-live' } }, 1008, 'gemini-live is not found for API version v1beta'],
    [
      { setup: { model: 'models/m', systemInstruction: 'a string' } },
      1007,
      "Invalid value at 'setup.system_instruction'",
    ],
    [
      { setup: { model: 'models/m', generationConfig: { responseModalities: ['AUDIO', 'TEXT'] } } },
      1007,
      'response_modalities',
    ],
    [{ unknownMessage: {} }, 1007, 'Unknown name "unknownMessage": Cannot find field'],
  ])('closes on %j with %i naming what is wrong', async (message, code, reason) => {
    await start();
    const c = await open();
    c.send(message);
    const closed = await c.closed;
    expect(closed.code).toBe(code);
    expect(closed.reason).toContain(reason);
    expect(Buffer.byteLength(closed.reason)).toBeLessThanOrEqual(123);
  });

  it('closes on audio whose mime type is not PCM, and notes audio sent before setupComplete', async () => {
    await start({ setupDelayMs: 300 });
    const c = await open();
    c.send(SETUP);
    c.send(audio(new Int16Array(320)));
    await waitFor(() => c.has('setupComplete'), 2000, 'setupComplete');
    expect(emulator!.sessions()[0]!.record.notes).toEqual(['realtimeInput sent before setupComplete']);
    c.send({ realtimeInput: { audio: { data: 'AAAA', mimeType: 'audio/opus' } } });
    const closed = await c.closed;
    expect(closed).toMatchObject({ code: 1007 });
    expect(closed.reason).toContain('audio content type "audio/opus" is not supported');
  });

  it('with automatic activity detection off, activityStart interrupts and activityEnd ends the turn; with it on, they close 1007', async () => {
    await start({ replyMs: 5000, outputRateFactor: 1 });
    const c = await open();
    c.send({
      setup: { ...SETUP.setup, realtimeInputConfig: { automaticActivityDetection: { disabled: true } } },
    });
    c.send({ realtimeInput: { activityStart: {} } });
    c.send(audio(generateTone(1000, 16000, 8000, 0.3)));
    c.send({ realtimeInput: { activityEnd: {} } });
    await waitFor(() => c.has('modelTurn'), 2000, 'the reply');
    c.send({ realtimeInput: { activityStart: {} } });
    await waitFor(() => c.has('interrupted'), 2000, 'interrupted');
    const other = await open();
    other.send(SETUP);
    other.send({ realtimeInput: { activityStart: {} } });
    expect((await other.closed).code).toBe(1007);
  });

  it('ends a connection at its life: goAway with the time left, then close 1011', async () => {
    await start({ connectionMs: 800, goAwayLeadMs: 300 });
    const c = await open();
    const t0 = performance.now();
    c.send(SETUP);
    await waitFor(() => c.has('goAway'), 2000, 'goAway');
    const goAwayAt = performance.now() - t0;
    expect(c.messages.find((m) => 'goAway' in m)).toEqual({ goAway: { timeLeft: '0.300s' } });
    const closed = await c.closed;
    const closedAt = performance.now() - t0;
    expect(closed).toEqual({ code: 1011, reason: 'Deadline expired before operation could complete.' });
    expect(goAwayAt).toBeGreaterThanOrEqual(480);
    expect(closedAt - goAwayAt).toBeGreaterThanOrEqual(280);
  });

  it('refuses an unknown resumption handle (1008), and a resumption while the old connection is open when told to (1011)', async () => {
    await start({ refuseResumeWhileOpen: true });
    const c = await open();
    c.send({ setup: { ...SETUP.setup, sessionResumption: { handle: 'no-such-handle' } } });
    expect(await c.closed).toMatchObject({ code: 1008, reason: 'Requested entity was not found.' });
    const first = await open();
    first.send({ setup: { ...SETUP.setup, sessionResumption: {} } });
    await waitFor(() => first.has('sessionResumptionUpdate'), 2000, 'a handle');
    const handle = (
      first.messages.find((m) => 'sessionResumptionUpdate' in m)!.sessionResumptionUpdate as {
        newHandle: string;
      }
    ).newHandle;
    const second = await open();
    second.send({ setup: { ...SETUP.setup, sessionResumption: { handle } } });
    expect((await second.closed).code).toBe(1011);
    first.ws.close();
    await first.closed;
    const third = await open();
    third.send({ setup: { ...SETUP.setup, sessionResumption: { handle } } });
    await waitFor(() => third.has('setupComplete'), 2000, 'setupComplete');
    expect(emulator!.sessions().at(-1)!.record).toMatchObject({ resumed_while_open: false });
  });

  it('serves go-away and malformed frames on the control API, and answers a bad body with 400', async () => {
    await start();
    const c = await open();
    c.send(SETUP);
    await waitFor(() => c.has('setupComplete'), 2000, 'setupComplete');
    const id = emulator!.sessions()[0]!.record.id;
    const post = (action: string, body: unknown) =>
      fetch(`${emulator!.base()}/emulator/gemini-live/sessions/${id}/${action}`, {
        method: 'POST',
        body: JSON.stringify(body),
      });
    const bad = await post('go-away', { time_left_ms: 'soon' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: { message: 'time_left_ms must be an integer from 0 to 600000, got "soon"' },
    });
    expect(await (await post('go-away', { time_left_ms: 2000 })).json()).toEqual({ time_left: '2s' });
    await waitFor(() => c.has('goAway'), 2000, 'goAway');
    const raw: Buffer[] = [];
    c.ws.removeAllListeners('message');
    c.ws.on('message', (d) => raw.push(d as Buffer));
    expect((await post('malformed', { kind: 'unknown_event' })).status).toBe(200);
    await waitFor(() => raw.length === 1, 2000, 'the malformed frame');
    expect(JSON.parse(String(raw[0]))).toEqual({ standInUnknownMessage: {} });
    const summary = (await (await fetch(`${emulator!.base()}/emulator/gemini-live/sessions`)).json()) as {
      sessions: { go_aways: unknown[] }[];
    };
    expect(summary.sessions[0]!.go_aways).toMatchObject([{ time_left: '2s' }]);
  });
});
