/**
 * Tools on our own protocol (`bridge`): the tools declared in session_start; several calls in flight on
 * one call, each answered to its own id with `tool_result` (a slow consult against the provider
 * emulator, with hold audio meanwhile; a fast webhook; an unknown tool; digits to the provider behind
 * the bot's audio); each call a `tool_call` live event and a count; a call that ends cancels what is in
 * flight, which is answered no more.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { call } from '../helpers/http-call.js';
import { startRig } from '../helpers/rig.js';
import { SseClient } from '../helpers/sse.js';
import { waitFor } from '../helpers/wait.js';
import { heardBetween, holdShare, json, startToolServer } from './helpers.js';

const COLLEAGUE = '4915112345678';
const RING_MS = 2000;
const HOLD_MS = 400;

describe('tools on the bridge dialect', () => {
  it('answers several calls in flight each to its own id, with hold audio, events and counts; the end cancels', async () => {
    await using server = await startToolServer((req, res) => {
      const { arguments: args } = JSON.parse(req.body) as { arguments: { q: string } };
      if (args.q !== 'slow') json(res, { found: args.q.length });
    });
    await using rig = await startRig({
      bot: { echo: false },
      providers: { voice: { dialPlan: new Map([[COLLEAGUE, { dialStatus: 'ANSWER', afterMs: RING_MS }]]) } },
      env: {
        BOT_TOOLS: JSON.stringify([
          'consult',
          'send_dtmf',
          {
            name: 'lookup',
            description: 'Looks something up.',
            parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
            url: `${server.url}/lookup`,
          },
        ]),
        BOT_TOOL_SECRET: 'environment-tool-secret',
        BOT_TOOL_HOLD_MS: String(HOLD_MS),
      },
    });
    const sse = new SseClient(`${rig.http}/v1/events`, await rig.restToken(['sessions:read']));
    expect(await sse.answered).toBe(200);
    const p = await rig.call('bridge-tools');
    const bot = await rig.bot!.waitConnection();
    const declared = (bot.sessionStart!.tools as { name: string; parameters: { type: string } }[]).map(
      (t) => [t.name, t.parameters.type],
    );
    expect(declared).toEqual([
      ['consult', 'object'],
      ['send_dtmf', 'object'],
      ['lookup', 'object'],
    ]);

    const t0 = performance.now();
    bot.send({ event: 'tool_call', id: 'c-1', name: 'consult', arguments: { number: COLLEAGUE } });
    bot.send({ event: 'tool_call', id: 'c-2', name: 'lookup', arguments: { q: 'abc' } });
    bot.send({ event: 'tool_call', id: 'c-3', name: 'transfer', arguments: {} });
    bot.send({ event: 'tool_call', id: 'c-4', name: 'send_dtmf', arguments: { digits: '12#' } });
    const result = (id: string) =>
      bot.events.find((e) => e.event === 'tool_result' && e.id === id) as
        | { at: number; output: Record<string, unknown> }
        | undefined;
    await waitFor(
      () => ['c-1', 'c-2', 'c-3', 'c-4'].every((id) => result(id) !== undefined),
      10_000,
      'four results',
    );
    expect(result('c-2')!.output).toEqual({ found: 3 });
    expect(result('c-3')!.output).toMatchObject({ error: 'not_found' });
    expect(result('c-3')!.output.message).toMatch(/consult, send_dtmf, lookup/);
    expect(result('c-4')!.output).toEqual({ ok: true });
    expect(result('c-1')!.output).toEqual({
      sessionId: 'bridge-tools',
      consultId: 'consult-bridge-tools',
      status: 'answered',
      dialStatus: 'ANSWER',
    });
    // The fast ones did not wait for the slow one.
    expect(result('c-2')!.at).toBeLessThan(result('c-1')!.at - 1000);
    expect(result('c-1')!.at - t0).toBeGreaterThan(RING_MS - 100);
    // The digits reached the provider, in order.
    await waitFor(() => p.events.filter((e) => e.event === 'dtmf').length === 3, 2_000, 'three digits');
    expect(p.events.filter((e) => e.event === 'dtmf').map((e) => e.digit)).toEqual(['1', '2', '#']);
    // Hold audio while the consult ran.
    expect(holdShare(heardBetween(p, t0 + HOLD_MS + 200, result('c-1')!.at - 100), 8000)).toBeGreaterThan(
      0.8,
    );

    // Live events: one per call, never the arguments.
    await waitFor(() => sse.of('tool_call').length === 4, 2_000, 'four tool_call events');
    const events = sse.of('tool_call').map((e) => e.data);
    expect(events.map((e) => [e.call_id, e.name, e.outcome])).toEqual(
      expect.arrayContaining([
        ['c-1', 'consult', 'ok'],
        ['c-2', 'lookup', 'ok'],
        ['c-3', 'transfer', 'error'],
        ['c-4', 'send_dtmf', 'ok'],
      ]),
    );
    for (const e of events) {
      expect(Object.keys(e).sort()).toEqual(['call_id', 'duration_ms', 'name', 'outcome', 'session_id']);
      expect(e.session_id).toBe('bridge-tools');
    }
    expect(events.find((e) => e.call_id === 'c-1')!.duration_ms).toBeGreaterThan(RING_MS - 100);

    // A call still in flight when the call ends is cancelled, and answered no more.
    bot.send({ event: 'tool_call', id: 'c-5', name: 'lookup', arguments: { q: 'slow' } });
    await waitFor(() => server.requests.length === 2, 2_000, 'the slow request');
    p.send({ event: 'session_end', reason: 'hangup' });
    await waitFor(() => sse.of('tool_call').length === 5, 2_000, 'the cancelled call');
    expect(sse.of('tool_call')[4]!.data).toMatchObject({ call_id: 'c-5', outcome: 'cancelled' });
    await waitFor(() => bot.closed, 5_000, 'the bot told the call ended');
    expect(result('c-5')).toBeUndefined();
    const metrics = (await call(rig.http, 'GET', '/metrics')).text;
    for (const [tool, outcome, n] of [
      ['consult', 'ok', 1],
      ['lookup', 'ok', 1],
      ['lookup', 'cancelled', 1],
      ['unknown', 'error', 1],
      ['send_dtmf', 'ok', 1],
    ] as const)
      expect(metrics).toContain(`voicebridge_tool_calls_total{tool="${tool}",outcome="${outcome}"} ${n}`);
    sse.close();
  });
});
