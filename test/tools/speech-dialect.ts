/**
 * The tool checks every speech-to-speech dialect passes, run against its stand-in through a real bridge
 * (test/tools/<dialect>.test.ts gives the stand-in and how its model calls a tool and its answer reads):
 *
 * - each kind of tool: `consult` against the provider emulator (its ConsultResult back, the caller
 *   hearing hold audio from tool_hold_ms on and nothing before), `conference`, `send_dtmf` (the digits at
 *   the provider), `send_message` (the messaging route's own answer, window closed then open), and a
 *   webhook tool on a real HTTP server (signed with the tool secret; arguments that do not fit never
 *   reach it and come back as `invalid_arguments` naming the field), each answered in the vendor's
 *   message with nothing of its protocol broken;
 * - `end_call` after a 3 s goodbye: the caller hears the goodbye whole, then the bridge hangs up.
 */
import { performance } from 'node:perf_hooks';
import { expect, it } from 'vitest';
import { fitTone } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import type { ReplyRecord } from '../../src/emulator/s2s/record.js';
import { verifySignature } from '../../src/tools/signature.js';
import { call as http } from '../helpers/http-call.js';
import { TestProvider } from '../helpers/provider.js';
import { startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';
import { dbfsOf, heardBetween, holdShare, json, startToolServer } from './helpers.js';

/** A tool's answer as the vendor's message carried it, read back. */
export interface ModelAnswer {
  /** The output, parsed from the vendor's text. */
  readonly output: Record<string, unknown>;
  /** The vendor's error flag, where its answer has one. */
  readonly isError?: boolean | undefined;
}

/** One session of the stand-in's model, as the checks drive it. */
export interface ModelSession {
  /** The model calls `name`, at once or once it has spoken `speakMs`; returns the call's id. */
  call(name: string, args: Record<string, unknown>, speakMs?: number): string;
  /** The answer to call `id`, once it came. */
  answer(id: string): ModelAnswer | undefined;
  /** The replies the model spoke. */
  replies(): readonly ReplyRecord[];
  /** How the client broke the vendor's protocol (none expected). */
  notes(): readonly string[];
}

/** A stand-in running for one test, and the bridge's bot settings that reach it. */
export interface ModelStandIn extends AsyncDisposable {
  readonly env: Readonly<Record<string, string>>;
  /** The next call's session, ready for tool calls. */
  session(): Promise<ModelSession>;
}

export const COLLEAGUE = '4915112345678';
const RING_MS = 2000;
const HOLD_MS = 400;
const TOOL_SECRET = 'speech-dialect-tool-secret';
const WEBHOOK_SECRET = 'speech-dialect-messaging-webhook-secret';
const CALLER_PHONE = '+14155550104';
export const LOOKUP = {
  name: 'lookup_order',
  description: "Looks up an order's status by its id.",
  parameters: {
    type: 'object',
    properties: { order_id: { type: 'string', minLength: 2 } },
    required: ['order_id'],
    additionalProperties: false,
  },
  timeout_ms: 2000,
};

/** Waits for the answer to `id`. */
export async function answerOf(s: ModelSession, id: string, timeoutMs = 10_000): Promise<ModelAnswer> {
  await waitFor(() => s.answer(id) !== undefined, timeoutMs, `the answer to ${id}`);
  return s.answer(id)!;
}

/** Waits until the model is not speaking. */
async function quiet(s: ModelSession): Promise<void> {
  await waitFor(() => s.replies().every((r) => r.status !== 'in_progress'), 5_000, 'the model to be quiet');
}

/** 20 ms windows of `x` where the tone at `hz` holds 90 % of the power or more. */
export function toneWindows(x: Int16Array, hz: number, rate: number): number {
  const win = rate / 50;
  let n = 0;
  for (let at = 0; at + win <= x.length; at += win) {
    const w = x.subarray(at, at + win);
    let p = 0;
    for (const v of w) p += v * v;
    if (p === 0) continue;
    const a = fitTone(w, hz, rate).amplitude * 32767;
    if (((a * a) / 2) * win >= 0.9 * p) n++;
  }
  return n;
}

/**
 * The checks of a dialect: `standIn` starts its stand-in; `errorFlag` says whether the vendor's answer
 * flags an error itself (ElevenLabs' `is_error`), so an error output must come flagged and an ok one not;
 * `endCall: false` leaves the end_call check to the dialect's own file.
 */
export function toolChecks(
  standIn: () => Promise<ModelStandIn>,
  o: { errorFlag: boolean; endCall?: boolean },
): void {
  const flagged = (a: ModelAnswer, error: boolean) => {
    if (o.errorFlag) expect(a.isError).toBe(error);
    else expect(a.isError).toBeUndefined();
  };

  it('runs each kind of tool and answers the model in its own message; a slow one holds the caller', async () => {
    await using model = await standIn();
    await using server = await startToolServer((req, res) => {
      const args = (JSON.parse(req.body) as { arguments: { order_id: string } }).arguments;
      json(res, { order_id: args.order_id, status: 'shipped' });
    });
    await using rig = await startRig({
      providers: {
        voice: { dialPlan: new Map([[COLLEAGUE, { dialStatus: 'ANSWER', afterMs: RING_MS }]]) },
        messaging: { reviewDelayMs: -1, deliveryDelayMs: 20, readDelayMs: -1 },
      },
      env: {
        ...model.env,
        BOT_TOOLS: JSON.stringify([
          'consult',
          'conference',
          'send_dtmf',
          'send_message',
          { ...LOOKUP, url: `${server.url}/orders` },
        ]),
        BOT_TOOL_SECRET: TOOL_SECRET,
        BOT_TOOL_HOLD_MS: String(HOLD_MS),
        MESSAGING_WEBHOOK_SECRET: WEBHOOK_SECRET,
      },
    });
    const p = new TestProvider(rig.mediaUrl, { token: await rig.mediaToken() });
    await using _p = { [Symbol.asyncDispose]: async () => p.close() };
    await p.start('s2s-tools', { customer_phone: CALLER_PHONE });
    const s = await model.session();

    // Call control: consult, slow, with hold audio from tool_hold_ms until its answer.
    const t0 = performance.now();
    const consult = s.call('consult', { number: COLLEAGUE });
    const consulted = await answerOf(s, consult);
    const tOut = performance.now();
    expect(consulted.output).toEqual({
      sessionId: 's2s-tools',
      consultId: 'consult-s2s-tools',
      status: 'answered',
      dialStatus: 'ANSWER',
    });
    flagged(consulted, false);
    expect(tOut - t0).toBeGreaterThan(RING_MS - 100);
    expect(dbfsOf(heardBetween(p, t0, t0 + HOLD_MS - 100))).toBeLessThan(-60);
    const held = heardBetween(p, t0 + HOLD_MS + 200, tOut - 100);
    expect(held.length).toBeGreaterThan(8000 * 1.0);
    expect(holdShare(held, 8000)).toBeGreaterThan(0.8);
    await quiet(s);

    const conference = await answerOf(s, s.call('conference', { action: 'add', number: COLLEAGUE }));
    expect(conference.output).toMatchObject({
      sessionId: 's2s-tools',
      number: COLLEAGUE,
      status: 'answered',
    });
    flagged(conference, false);
    await quiet(s);

    // Digits: at the provider, in order.
    const digits = await answerOf(s, s.call('send_dtmf', { digits: '12#' }));
    expect(digits.output).toEqual({ ok: true });
    await waitFor(() => p.events.filter((e) => e.event === 'dtmf').length === 3, 2_000, 'three digits');
    expect(p.events.filter((e) => e.event === 'dtmf').map((e) => e.digit)).toEqual(['1', '2', '#']);
    await quiet(s);

    // Messaging: the route's own refusal while the chat window is closed, then a send once it is open.
    const text = { channel: 'chat', text: 'Your link: https://example.com/b/17' };
    const closed = await answerOf(s, s.call('send_message', text));
    const route = await http(rig.http, 'POST', '/v1/sessions/s2s-tools/message', {
      token: await rig.restToken(['calls:control', 'messages:manage']),
      body: { channel: 'chat', message: { type: 'text', text: { body: text.text } } },
    });
    expect(route.status, route.text).toBe(409);
    expect(closed.output).toEqual(route.body);
    flagged(closed, true);
    await quiet(s);
    const control = (path: string, body: unknown) =>
      http(rig.emulatorUrl!, 'POST', `/emulator/messaging${path}`, { body });
    expect(
      (
        await http(rig.emulatorUrl!, 'PUT', '/emulator/messaging/webhook', {
          body: { url: `${rig.http}/v1/webhooks/messaging?token=${WEBHOOK_SECRET}` },
        })
      ).status,
    ).toBe(200);
    expect(
      (await control('/accounts/default/inbound', { from: CALLER_PHONE.slice(1), text: 'hi' })).status,
    ).toBe(200);
    const sent = await answerOf(s, s.call('send_message', text));
    expect(sent.output).toEqual({ message_id: expect.stringMatching(/\S/), status: 'sent' });
    await quiet(s);

    // The tenant's webhook tool: signed, its answer the output.
    const found = await answerOf(s, s.call('lookup_order', { order_id: 'A17' }));
    expect(found.output).toEqual({ order_id: 'A17', status: 'shipped' });
    flagged(found, false);
    expect(server.requests).toHaveLength(1);
    const seen = server.requests[0]!;
    expect(JSON.parse(seen.body)).toMatchObject({ session_id: 's2s-tools', tool: 'lookup_order' });
    expect(verifySignature(seen.headers['x-voicebridge-signature'] as string, seen.body, TOOL_SECRET)).toBe(
      true,
    );
    await quiet(s);

    // Arguments that do not fit: an error naming the field, and the server never asked.
    const bad = await answerOf(s, s.call('lookup_order', { order_id: 17 }));
    expect(bad.output).toMatchObject({
      error: 'invalid_arguments',
      message: expect.stringMatching(/order_id/),
    });
    flagged(bad, true);
    const missing = await answerOf(s, s.call('send_dtmf', {}));
    expect(missing.output).toMatchObject({
      error: 'invalid_arguments',
      message: expect.stringMatching(/digits/),
    });
    expect(server.requests).toHaveLength(1);

    expect(s.notes()).toEqual([]);
    expect(p.closeCode).toBeUndefined();
  });

  // A dialect whose end_call differs (Gemini Live: no answer, as one would make the model speak on)
  // checks it in its own file.
  if (o.endCall === false) return;
  it('end_call after a 3 s goodbye: the caller hears it whole, then the bridge hangs up', async () => {
    await using model = await standIn();
    await using rig = await startRig({ env: { ...model.env, BOT_TOOLS: '["end_call"]' } });
    const rate = 8000;
    const caller = new SyntheticCall({
      url: rig.mediaUrl,
      token: await rig.mediaToken(),
      sessionId: 's2s-bye',
      customerPhone: CALLER_PHONE,
      direction: 'inbound',
      format: { codec: 'slin', inputRate: rate, outputRate: rate, encoding: 'binary', chunkBytes: 320 },
      // Silence for longer than the goodbye: the bridge, not the caller, ends the call.
      audio: new Int16Array(rate * 12),
      keepReceived: true,
    });
    const startedAt = performance.now();
    const done = caller.run();
    const s = await model.session();
    const GOODBYE_MS = 3000;
    const id = s.call('end_call', { reason: 'the caller said goodbye' }, GOODBYE_MS);
    const report = await done;
    const endedAfter = performance.now() - startedAt;

    const goodbye = s.replies()[0]!;
    expect(goodbye.planned_ms).toBe(GOODBYE_MS);
    // All of the goodbye (>= 98 % of its 20 ms windows), then the hang-up: a close, long before the
    // caller's own 12 s were over.
    expect(toneWindows(report.received, goodbye.tone_hz, rate)).toBeGreaterThanOrEqual(
      0.98 * (GOODBYE_MS / 20),
    );
    expect(report.closeCode).toBe(1000);
    // The hang-up waited for the provider's report that the goodbye had played (the agent's answer to
    // the output may follow it: what the bridge has of it by then plays out too).
    expect(report.ackedMarks.filter((m) => /^vbt:end:/.test(m.name)).map((m) => m.how)).toEqual(['played']);
    expect(endedAfter).toBeLessThan(9_000);
    const answer = await answerOf(s, id, 2_000);
    expect(answer.output).toEqual({ ok: true });
    flagged(answer, false);
    expect(s.notes()).toEqual([]);
  });
}
