/**
 * The call's tools on a `gemini-live` call, the Gemini Live stand-in as the model and the provider
 * emulator as the voice API: the tools declared in `setup.tools` (with their JSON Schema); `consult`
 * answered with the emulator's ConsultResult as `toolResponse.functionResponses [{id, name, response}]`,
 * the caller hearing hold audio meanwhile; `send_dtmf` reaching the provider and bad arguments answered
 * naming the field; `end_call` after a 3 s goodbye hanging up once it played, its answer not sent; a
 * webhook tool signed and answered, and a `toolCallCancellation` dropping a pending answer.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { SyntheticCall } from '../../src/emulator/caller.js';
import type { GeminiConnection } from '../../src/emulator/gemini-live/connection.js';
import { createGeminiLiveEmulator, type GeminiLiveEmulator } from '../../src/emulator/gemini-live/server.js';
import { verifySignature } from '../../src/tools/signature.js';
import { call } from '../helpers/http-call.js';
import { startRig } from '../helpers/rig.js';
import { quietFor, waitFor } from '../helpers/wait.js';
import { dbfsOf, heardBetween, holdShare, json, startToolServer } from './helpers.js';
import { type ModelSession, type ModelStandIn, toolChecks } from './speech-dialect.js';

const COLLEAGUE = '4915112345678';
const RING_MS = 2500;
const HOLD_MS = 500;
const KEY = 'AIza-gemini-tools-key-0000';

async function standIn(o: Parameters<typeof createGeminiLiveEmulator>[0] = {}) {
  const em = createGeminiLiveEmulator({ apiKey: KEY, ...o });
  await em.listen(0);
  return Object.assign(em, { [Symbol.asyncDispose]: () => em.close() });
}

const env = (em: GeminiLiveEmulator, tools: unknown, extra: Record<string, string> = {}) => ({
  BOT_DIALECT: 'gemini-live',
  BOT_URL: em.wsUrl().split('?')[0]!,
  BOT_API_KEY: KEY,
  BOT_TOOLS: JSON.stringify(tools),
  ...extra,
});

async function session(em: GeminiLiveEmulator): Promise<GeminiConnection> {
  const conn = await em.waitForSession(1, 10_000);
  await waitFor(() => conn.record.sent.includes('setupComplete'), 5_000, 'the model session');
  return conn;
}

/** The model calls `name`; resolves with the `response` the bridge answered, and how long it took. */
async function useTool(conn: GeminiConnection, name: string, args: Record<string, unknown>) {
  const t0 = performance.now();
  const id = conn.callTool(name, args);
  const rec = () => conn.record.tool_calls.find((c) => c.id === id)!;
  await waitFor(() => rec().answer !== null, 35_000, `the toolResponse to ${name}`);
  const answer = rec().answer as { id: string; name: string; response: Record<string, unknown> };
  expect(answer.id).toBe(id);
  expect(answer.name).toBe(name);
  return { t0, tOut: performance.now(), response: answer.response };
}

/** The stand-in for the checks every speech dialect passes (speech-dialect.ts). */
async function modelStandIn(extra: Record<string, string> = {}): Promise<ModelStandIn> {
  const em = await standIn();
  return {
    env: { BOT_DIALECT: 'gemini-live', BOT_URL: em.wsUrl().split('?')[0]!, BOT_API_KEY: KEY, ...extra },
    async session(): Promise<ModelSession> {
      const conn = await session(em);
      return {
        call: (name, args) => conn.callTool(name, args),
        answer(id) {
          const answer = conn.record.tool_calls.find((c) => c.id === id)?.answer as
            | { id: string; name: string; response: Record<string, unknown> }
            | null
            | undefined;
          if (answer === null || answer === undefined) return undefined;
          expect(Object.keys(answer).sort()).toEqual(['id', 'name', 'response']);
          return { output: answer.response };
        },
        replies: () => conn.record.replies,
        notes: () => conn.record.notes,
      };
    },
    [Symbol.asyncDispose]: () => em.close(),
  };
}

describe('tools on gemini-live: the checks every speech dialect passes', () => {
  toolChecks(() => modelStandIn(), { errorFlag: false, endCall: false });

  it('the idle reprompt on a silent caller is a realtimeInput.text the model answers', async () => {
    await using em = await standIn();
    await using rig = await startRig({
      env: env(em, ['end_call'], { BOT_IDLE: JSON.stringify({ reprompt_after_ms: 1000 }) }),
    });
    await rig.call('gl-idle');
    const conn = await session(em);
    await waitFor(() => conn.record.texts.length > 0, 5_000, 'the reprompt');
    expect(conn.record.texts[0]).toMatchObject({ type: 'realtimeInput.text', text: '[silence 1 s]' });
    expect(conn.record.notes).toEqual([]);
  });
});

describe('tools on gemini-live', () => {
  it('declares the tools in setup.tools; consult answers the ConsultResult as the functionResponse, with hold audio meanwhile', async () => {
    await using em = await standIn();
    await using rig = await startRig({
      providers: {
        voice: { dialPlan: new Map([[COLLEAGUE, { dialStatus: 'ANSWER', afterMs: RING_MS }]]) },
      },
      env: env(em, ['consult', 'send_dtmf'], { BOT_TOOL_HOLD_MS: String(HOLD_MS) }),
    });
    const p = await rig.call('tool-consult');
    const conn = await session(em);
    const setup = (conn.record.received[0]!.message as { setup: { tools: unknown[] } }).setup;
    expect(setup.tools).toEqual([
      {
        functionDeclarations: [
          expect.objectContaining({
            name: 'consult',
            parametersJsonSchema: expect.objectContaining({ type: 'object' }),
          }),
          expect.objectContaining({
            name: 'send_dtmf',
            parametersJsonSchema: expect.objectContaining({ type: 'object' }),
          }),
        ],
      },
    ]);

    const { t0, tOut, response } = await useTool(conn, 'consult', { number: COLLEAGUE });
    expect(response).toEqual({
      sessionId: 'tool-consult',
      consultId: 'consult-tool-consult',
      status: 'answered',
      dialStatus: 'ANSWER',
    });
    expect(tOut - t0).toBeGreaterThan(RING_MS - 100);
    // The answer makes the model speak: a reply after it.
    await waitFor(() => conn.record.replies.length === 1, 5_000, 'the reply to the answer');
    const before = heardBetween(p, t0, t0 + HOLD_MS - 100);
    expect(dbfsOf(before)).toBeLessThan(-60);
    const held = heardBetween(p, t0 + HOLD_MS + 200, tOut - 100);
    expect(held.length).toBeGreaterThan(8000 * 1.2);
    expect(dbfsOf(held)).toBeGreaterThan(-45);
    expect(holdShare(held, 8000)).toBeGreaterThan(0.8);

    // send_dtmf: the digits go to the caller's line; bad digits are answered naming the field.
    const dtmf = await useTool(conn, 'send_dtmf', { digits: '12#' });
    expect(dtmf.response).toEqual({ ok: true });
    await waitFor(() => p.events.filter((e) => e.event === 'dtmf').length === 3, 5_000, 'the digits');
    expect(p.events.filter((e) => e.event === 'dtmf').map((e) => e.digit)).toEqual(['1', '2', '#']);
    const bad = await useTool(conn, 'send_dtmf', { digits: 'xyz' });
    expect(bad.response.error).toBe('invalid_arguments');
    expect(bad.response.message).toMatch(/digits/);
    expect(conn.record.notes).toEqual([]);
  });

  it('end_call after a 3 s goodbye: the caller hears it all, then the hang-up; no answer makes the model speak on', async () => {
    await using em = await standIn({ outputRateFactor: 4 });
    await using rig = await startRig({
      env: env(em, ['end_call'], { BOT_DTMF: 'respond', BOT_INSTRUCTIONS: 'Say goodbye. reply_ms=3000' }),
    });
    const rate = 8000;
    const caller = new SyntheticCall({
      url: rig.mediaUrl,
      token: await rig.mediaToken(),
      sessionId: 'gl-bye',
      customerPhone: '4915100000001',
      direction: 'inbound',
      format: { codec: 'slin', inputRate: rate, outputRate: rate, encoding: 'binary', chunkBytes: 320 },
      audio: new Int16Array(rate * 10),
      keepReceived: true,
    });
    const done = caller.run();
    const conn = await session(em);
    // The model's goodbye (a user text asks for it), all of it sent, then its call of end_call.
    conn.onFrame(Buffer.from(JSON.stringify({ realtimeInput: { text: 'bye' } })), false);
    await waitFor(
      () => conn.record.sent.includes('serverContent.generationComplete'),
      5_000,
      'the goodbye sent',
    );
    conn.callTool('end_call', { reason: 'the caller said goodbye' });
    const report = await done;
    const toneSamples = report.received.filter((v) => v !== 0).length;
    console.log(
      `gemini-live end_call: ${toneSamples / 8} ms of the 3000 ms goodbye heard before the hang-up`,
    );
    expect(toneSamples).toBeGreaterThanOrEqual(0.98 * 3 * rate);
    expect(report.closeCode).toBe(1000);
    expect(report.ackedMarks.at(-1)!.name).toMatch(/^vbt:end:/);
    await quietFor(200, 'an answer');
    expect(conn.record.tool_calls[0]!.answer).toBeNull();
    expect(conn.record.replies).toHaveLength(1);
  });

  it('a webhook tool: signed, its output the functionResponse; a toolCallCancellation drops the pending answer', async () => {
    const SECRET = 'tenant-tool-secret-gemini';
    await using server = await startToolServer((req, res) => {
      const args = (JSON.parse(req.body) as { arguments: { order_id: string } }).arguments;
      if (args.order_id === 'SLOW') return; // never answers
      json(res, { order_id: args.order_id, status: 'shipped' });
    });
    await using em = await standIn();
    await using rig = await startRig({ log: 'debug' });
    const put = await call(rig.http, 'PUT', '/v1/media-stream', {
      token: await rig.restToken(['media:manage']),
      body: {
        media_ws_url: 'wss://media.example/v1/media',
        tool_secret: SECRET,
        bot: {
          dialect: 'gemini-live',
          url: em.wsUrl().split('?')[0],
          api_key: KEY,
          tools: [
            {
              name: 'lookup_order',
              description: "Looks up an order's status.",
              parameters: {
                type: 'object',
                properties: { order_id: { type: 'string' } },
                required: ['order_id'],
                additionalProperties: false,
              },
              url: `${server.url}/orders`,
              timeout_ms: 5000,
            },
          ],
        },
      },
    });
    expect(put.status, put.text).toBe(200);
    const p = await rig.call('gl-webhook');
    const conn = await session(em);
    const decl = (
      conn.record.received[0]!.message as { setup: { tools: { functionDeclarations: unknown[] }[] } }
    ).setup.tools[0]!.functionDeclarations[0];
    expect(decl).toEqual({
      name: 'lookup_order',
      description: "Looks up an order's status.",
      parametersJsonSchema: {
        type: 'object',
        properties: { order_id: { type: 'string' } },
        required: ['order_id'],
        additionalProperties: false,
      },
    });
    const ok = await useTool(conn, 'lookup_order', { order_id: 'A17' });
    expect(ok.response).toEqual({ order_id: 'A17', status: 'shipped' });
    const sig = server.requests[0]!.headers['x-voicebridge-signature'] as string;
    expect(verifySignature(sig, server.requests[0]!.body, SECRET)).toBe(true);
    await waitFor(() => conn.record.replies[0]?.status === 'completed', 10_000, 'the reply to the answer');

    // The caller speaks over a call still pending: the model withdraws it, and no answer goes.
    const id = conn.callTool('lookup_order', { order_id: 'SLOW' });
    await waitFor(() => server.requests.length === 2, 5_000, 'the slow request');
    conn.speechStarted();
    expect(conn.record.tool_cancellations.map((c) => c.ids)).toEqual([[id]]);
    await waitFor(
      () => rig.logs.some((l) => l.includes('"outcome":"cancelled"')),
      5_000,
      'the call counted as cancelled',
    );
    await quietFor(300, 'an answer to the cancelled call');
    expect(conn.record.tool_calls.find((c) => c.id === id)!.answer).toBeNull();
    expect(conn.record.notes).toEqual([]);
    expect(p.closeCode).toBeUndefined();
    expect(rig.logs.join('\n')).not.toContain(KEY);
  });
});
