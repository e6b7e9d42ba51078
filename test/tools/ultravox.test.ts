/**
 * Tools on the `ultravox` dialect, against the Ultravox stand-in (src/emulator/ultravox/): the call's
 * tools declared as client tools in the create-call body's `selectedTools`, and each kind of tool
 * called by the agent (`client_tool_invocation`) and answered as `client_tool_result` to its own
 * `invocationId`: `consult` against the provider emulator with hold audio meanwhile, `conference`,
 * `send_dtmf`, `send_message` (its refusal word for word the route's), bad arguments (an error output
 * naming the field), a tenant's webhook tool (signed, its bad arguments never sent, a hanging server
 * timed out), and `end_call` after a 3 s goodbye heard whole, answered with `agentReaction` `listens`.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { steadyToneSnrDb } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import type { UltravoxConnection } from '../../src/emulator/ultravox/connection.js';
import { createUltravoxEmulator, type UltravoxEmulator } from '../../src/emulator/ultravox/server.js';
import { verifySignature } from '../../src/tools/signature.js';
import { call as http } from '../helpers/http-call.js';
import { TestProvider } from '../helpers/provider.js';
import { type RigOptions, startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';
import { dbfsOf, heardBetween, holdShare, json, startToolServer } from './helpers.js';

const KEY = 'uv-tools-key-0123456789';
const COLLEAGUE = '4915112345678';
const RING_MS = 2500;
const HOLD_MS = 500;

let emulator: UltravoxEmulator | undefined;
const providers: TestProvider[] = [];
afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await emulator?.close();
  emulator = undefined;
});

/** The stand-in, and a rig whose default bot is an Ultravox call on it with `tools`. */
async function ultravoxRig(tools: unknown[], o: Omit<RigOptions, 'process'> & { greetingMs?: number } = {}) {
  emulator = createUltravoxEmulator({ apiKey: KEY });
  await emulator.listen(0, '127.0.0.1');
  const { greetingMs, ...rig } = o;
  return startRig({
    ...rig,
    env: {
      BOT_DIALECT: 'ultravox',
      BOT_API_BASE: emulator.base(),
      BOT_API_KEY: KEY,
      BOT_TOOLS: JSON.stringify(tools),
      BOT_TOOL_HOLD_MS: String(HOLD_MS),
      ...(greetingMs === undefined
        ? { BOT_SETTINGS: JSON.stringify({ firstSpeakerSettings: { user: {} } }) }
        : { BOT_INSTRUCTIONS: `Say goodbye. reply_ms=${greetingMs}` }),
      ...o.env,
    },
  });
}

/** The agent calls `name`; the result it got, its output parsed, and how long it took. */
async function useTool(conn: UltravoxConnection, name: string, args: Record<string, unknown>) {
  const n = conn.record.tool_calls.length;
  const t0 = performance.now();
  const id = conn.callTool(name, args);
  await waitFor(() => conn.record.tool_calls[n]?.answer != null, 35_000, `the result of ${name}`);
  const ms = performance.now() - t0;
  const answer = conn.record.tool_calls[n]!.answer as Record<string, unknown>;
  expect(answer.type).toBe('client_tool_result');
  expect(answer.invocationId).toBe(id);
  expect(typeof answer.result).toBe('string');
  return { answer, ms, output: JSON.parse(answer.result as string) as Record<string, unknown> };
}

describe('tools on the ultravox dialect', () => {
  it('declares the tools as client tools; consult answers the ConsultResult, with hold audio meanwhile', async () => {
    await using rig = await ultravoxRig(['consult', 'end_call'], {
      providers: {
        voice: { dialPlan: new Map([[COLLEAGUE, { dialStatus: 'ANSWER', afterMs: RING_MS }]]) },
      },
    });
    const p = await rig.call('uv-consult');
    const conn = await emulator!.waitForSession(1, 10_000);
    const body = emulator!.calls().get(conn.call.callId)!.spec.body as {
      selectedTools: { temporaryTool: Record<string, unknown> }[];
    };
    expect(body.selectedTools.map((t) => t.temporaryTool.modelToolName)).toEqual(['consult', 'end_call']);
    const consult = body.selectedTools[0]!.temporaryTool;
    expect(consult).toMatchObject({ client: {}, timeout: '35s', description: expect.stringMatching(/\S/) });
    expect(
      (consult.dynamicParameters as { name: string; location: string; required: boolean }[]).map((d) => [
        d.name,
        d.location,
        d.required,
      ]),
    ).toEqual([
      ['number', 'PARAMETER_LOCATION_BODY', true],
      ['caller_id', 'PARAMETER_LOCATION_BODY', false],
    ]);
    expect(conn.call.spec.clientTools).toEqual(['consult', 'end_call']);

    const t0 = performance.now();
    const { output, ms, answer } = await useTool(conn, 'consult', { number: COLLEAGUE });
    const tOut = t0 + ms;
    expect(output).toEqual({
      sessionId: 'uv-consult',
      consultId: 'consult-uv-consult',
      status: 'answered',
      dialStatus: 'ANSWER',
    });
    expect(answer.agentReaction).toBeUndefined();
    expect(ms).toBeGreaterThan(RING_MS - 100);
    // Hold audio from tool_hold_ms into the consult until its result; nothing before.
    expect(dbfsOf(heardBetween(p, t0, t0 + HOLD_MS - 100))).toBeLessThan(-60);
    const held = heardBetween(p, t0 + HOLD_MS + 200, tOut - 100);
    console.log(
      `ultravox consult: result after ${ms.toFixed(0)} ms, ${held.length / 8} ms of hold audio heard at ${dbfsOf(held).toFixed(1)} dBFS, hold share ${holdShare(held, 8000).toFixed(2)}`,
    );
    expect(held.length).toBeGreaterThan(8000 * 1.2);
    expect(dbfsOf(held)).toBeGreaterThan(-45);
    expect(holdShare(held, 8000)).toBeGreaterThan(0.8);
    expect(conn.record.notes).toEqual([]);
  });

  it('conference, send_dtmf and send_message as the routes do; bad arguments get an error naming the field', async () => {
    await using rig = await ultravoxRig(['conference', 'send_dtmf', 'send_message'], {
      providers: { voice: {}, messaging: { reviewDelayMs: -1, deliveryDelayMs: 20, readDelayMs: -1 } },
    });
    const p = new TestProvider(rig.mediaUrl, { token: await rig.mediaToken() });
    providers.push(p);
    await p.start('uv-tools', { customer_phone: '+1 (415) 555-0104' });
    const conn = await emulator!.waitForSession(1, 10_000);

    const add = await useTool(conn, 'conference', { action: 'add', number: '4915100000009' });
    expect(add.output).toMatchObject({ sessionId: 'uv-tools', number: '4915100000009', status: 'answered' });
    const token = await rig.restToken(['sessions:read', 'calls:control']);
    const session = await http(rig.http, 'GET', '/v1/sessions/uv-tools', { token });
    expect(session.body.conferenceNumbers).toEqual(['4915100000009']);
    const again = await useTool(conn, 'conference', { action: 'add', number: '4915100000009' });
    expect(again.output.error).toBe('conflict');

    const dtmf = await useTool(conn, 'send_dtmf', { digits: '12#' });
    expect(dtmf.output).toEqual({ ok: true });
    const digits = () => p.events.filter((e) => e.event === 'dtmf').map((e) => e.digit);
    await waitFor(() => digits().length === 3, 3_000, 'the digits at the provider');
    expect(digits()).toEqual(['1', '2', '#']);

    // The caller never wrote in: the chat window is closed, and the tool says so as the route does.
    const text = { channel: 'chat', text: 'Your booking link: https://example.com/b/17' };
    const closed = await useTool(conn, 'send_message', text);
    const route = await http(rig.http, 'POST', '/v1/sessions/uv-tools/message', {
      token,
      body: { channel: 'chat', message: { type: 'text', text: { body: text.text } } },
    });
    expect(route.status).toBe(409);
    expect(closed.output).toEqual(route.body);

    // Bad arguments: an error output naming the field, and nothing done.
    const badDigits = await useTool(conn, 'send_dtmf', { digits: 'xyz' });
    expect(badDigits.output).toMatchObject({
      error: 'invalid_arguments',
      message: expect.stringMatching(/digits/),
    });
    const badAction = await useTool(conn, 'conference', { action: 'kick', number: '4915100000009' });
    expect(badAction.output).toMatchObject({
      error: 'invalid_arguments',
      message: expect.stringMatching(/action/),
    });
    expect((await http(rig.http, 'GET', '/v1/sessions/uv-tools', { token })).body.conferenceNumbers).toEqual([
      '4915100000009',
    ]);
    expect(p.closeCode).toBeUndefined();
    expect(conn.record.notes).toEqual([]);
    p.close();
  });

  it("a tenant's webhook tool: signed, its output to the agent; bad arguments never sent; a hanging server times out", async () => {
    const SECRET = 'uv-tenant-tool-secret-77';
    await using server = await startToolServer((req, res) => {
      const args = (JSON.parse(req.body) as { arguments: { order_id: string } }).arguments;
      if (args.order_id === 'SLOW') return; // never answers
      json(res, { order_id: args.order_id, status: 'shipped' });
    });
    const lookup = {
      name: 'lookup_order',
      description: "Looks up an order's status by its id.",
      parameters: {
        type: 'object',
        properties: { order_id: { type: 'string', minLength: 2 } },
        required: ['order_id'],
        additionalProperties: false,
      },
      url: `${server.url}/orders`,
      timeout_ms: 800,
    };
    await using rig = await ultravoxRig([lookup], { env: { BOT_TOOL_SECRET: SECRET }, log: 'debug' });
    const p = await rig.call('uv-webhook');
    const conn = await emulator!.waitForSession(1, 10_000);
    const declared = (
      emulator!.calls().get(conn.call.callId)!.spec.body as {
        selectedTools: { temporaryTool: Record<string, unknown> }[];
      }
    ).selectedTools[0]!.temporaryTool;
    expect(declared.dynamicParameters).toEqual([
      {
        name: 'order_id',
        location: 'PARAMETER_LOCATION_BODY',
        schema: { type: 'string', minLength: 2 },
        required: true,
      },
    ]);

    const ok = await useTool(conn, 'lookup_order', { order_id: 'A17' });
    expect(ok.output).toEqual({ order_id: 'A17', status: 'shipped' });
    expect(server.requests).toHaveLength(1);
    const seen = server.requests[0]!;
    expect(JSON.parse(seen.body)).toMatchObject({
      session_id: 'uv-webhook',
      tool: 'lookup_order',
      call_id: conn.record.tool_calls[0]!.id,
      arguments: { order_id: 'A17' },
    });
    expect(verifySignature(seen.headers['x-voicebridge-signature'] as string, seen.body, SECRET)).toBe(true);

    const bad = await useTool(conn, 'lookup_order', { order_id: 17 });
    expect(bad.output).toMatchObject({
      error: 'invalid_arguments',
      message: expect.stringMatching(/order_id/),
    });
    expect(server.requests).toHaveLength(1);

    const slow = await useTool(conn, 'lookup_order', { order_id: 'SLOW' });
    expect(slow.output.error).toBe('upstream_timeout');
    expect(slow.ms).toBeLessThan(800 + 1000);
    expect(p.closeCode).toBeUndefined();
    const log = rig.logs.join('\n');
    expect(log).toContain('"tool":"lookup_order"');
    for (const secretish of ['A17', 'shipped', SECRET, KEY]) expect(log).not.toContain(secretish);
  });

  it('end_call after a 3 s goodbye: the caller hears all of it, then the hang-up; the agent only listens', async () => {
    const GOODBYE_MS = 3000;
    const RATE = 8000;
    await using rig = await ultravoxRig(['end_call'], { greetingMs: GOODBYE_MS });
    const caller = new SyntheticCall({
      url: rig.mediaUrl,
      token: await rig.mediaToken(),
      sessionId: 'uv-bye',
      customerPhone: '4915100000001',
      direction: 'inbound',
      format: { codec: 'slin', inputRate: RATE, outputRate: RATE, encoding: 'binary', chunkBytes: 320 },
      // Silence for longer than the goodbye: the bridge, not the caller, ends the call.
      audio: new Int16Array(RATE * 10),
      keepReceived: true,
    });
    const done = caller.run();
    const conn = await emulator!.waitForSession(1, 10_000);
    // The agent speaks first: its goodbye is all sent at once (the 30 s client buffer), then it hangs up.
    await waitFor(() => (conn.record.replies[0]?.sent_ms ?? 0) >= GOODBYE_MS, 5_000, 'the goodbye sent');
    const id = conn.callTool('end_call', { reason: 'the caller said goodbye' });
    const report = await done;

    const heard = report.received;
    const toneSamples = heard.filter((v) => v !== 0).length;
    console.log(`ultravox end_call: ${((100 * toneSamples) / (3 * RATE)).toFixed(1)} % of the goodbye heard`);
    expect(toneSamples).toBeGreaterThanOrEqual(0.98 * (GOODBYE_MS / 1000) * RATE);
    expect(steadyToneSnrDb(heard, replyToneHz(0), RATE)).toBeGreaterThan(25);
    expect(report.closeCode).toBe(1000);
    await waitFor(() => conn.record.tool_calls[0]?.answer != null, 2_000, 'the result');
    expect(conn.record.tool_calls[0]!.answer).toEqual({
      type: 'client_tool_result',
      invocationId: id,
      result: '{"ok":true}',
      agentReaction: 'listens',
    });
    // The agent said nothing after it.
    expect(conn.record.replies).toHaveLength(1);
  });

  it('the idle policy: a silent caller gets a reprompt as user text the agent answers, then the hang-up', async () => {
    const R = 1500;
    const H = 4000;
    const RATE = 8000;
    await using rig = await ultravoxRig([], {
      env: {
        BOT_IDLE: JSON.stringify({ reprompt_after_ms: R, hangup_after_ms: H }),
        BOT_INSTRUCTIONS: 'reply_ms=600',
      },
    });
    const caller = new SyntheticCall({
      url: rig.mediaUrl,
      token: await rig.mediaToken(),
      sessionId: 'uv-idle',
      customerPhone: '4915100000002',
      direction: 'inbound',
      format: { codec: 'slin', inputRate: RATE, outputRate: RATE, encoding: 'binary', chunkBytes: 320 },
      audio: new Int16Array(RATE * 10),
      keepReceived: true,
    });
    const done = caller.run();
    const conn = await emulator!.waitForSession(1, 10_000);
    await waitFor(() => conn.record.texts.length === 1, R + 2000, 'the reprompt');
    expect(conn.record.received.find((m) => m.type === 'user_text_message')?.message).toEqual({
      type: 'user_text_message',
      text: expect.stringMatching(/^\[silence \d+ s\]$/),
      urgency: 'soon',
    });
    const report = await done;
    expect(report.closeCode).toBe(1000);
    // The agent answered the reprompt (600 ms of its tone), heard before the hang-up.
    expect(conn.record.replies).toHaveLength(1);
    expect(report.received.filter((v) => v !== 0).length).toBeGreaterThan(0.5 * RATE);
  });
});
