/**
 * The model calls `consult` on an openai-realtime call placed by the voice API's provider (the
 * provider emulator): the emulator's ConsultResult comes back to the model as its function_call_output,
 * followed by a response request, and the caller hears hold audio while the consult runs.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';
import { dbfsOf, heardBetween, holdShare } from './helpers.js';

const COLLEAGUE = '4915112345678';
const RING_MS = 2500;
const HOLD_MS = 500;

describe('consult on openai-realtime', () => {
  it('answers the ConsultResult as function_call_output, with hold audio meanwhile', async () => {
    await using rig = await startRig({
      realtime: {},
      providers: {
        voice: { dialPlan: new Map([[COLLEAGUE, { dialStatus: 'ANSWER', afterMs: RING_MS }]]) },
      },
      env: { BOT_TOOLS: '["consult"]', BOT_TOOL_HOLD_MS: String(HOLD_MS) },
    });
    const p = await rig.call('tool-consult');
    const conn = await rig.realtime!.waitForSession(1, 10_000);
    await waitFor(() => conn.record.sent.includes('session.updated'), 5_000, 'the model session');
    const update = conn.record.events.find((e) => e.type === 'session.update')!.event as {
      session: { tools: { type: string; name: string; parameters: object }[] };
    };
    expect(update.session.tools.map((t) => [t.type, t.name])).toEqual([['function', 'consult']]);

    const t0 = performance.now();
    const callId = conn.callTool('consult', { number: COLLEAGUE });
    await waitFor(() => conn.record.toolOutputs.length === 1, 10_000, 'the function_call_output');
    const tOut = performance.now();
    const out = conn.record.toolOutputs[0]!;
    expect(out.call_id).toBe(callId);
    expect(JSON.parse(out.output)).toEqual({
      sessionId: 'tool-consult',
      consultId: 'consult-tool-consult',
      status: 'answered',
      dialStatus: 'ANSWER',
    });
    expect(tOut - t0).toBeGreaterThan(RING_MS - 100);
    // The output, then one response request: the model speaks its answer.
    await waitFor(() => conn.record.responses.length === 2, 5_000, 'the answer response');
    const events = conn.record.events;
    const outputAt = events.findIndex(
      (e) =>
        e.type === 'conversation.item.create' &&
        (e.event as { item: { type: string } }).item.type === 'function_call_output',
    );
    expect(events.slice(outputAt).filter((e) => e.type === 'response.create')).toHaveLength(1);
    // Reported twice by the server (its arguments' done event and response.done), run and answered once.
    expect(conn.record.toolOutputs).toHaveLength(1);
    expect(events.filter((e) => e.type === 'conversation.item.create')).toHaveLength(1);

    // Hold audio from tool_hold_ms into the consult until its output; nothing before.
    const before = heardBetween(p, t0, t0 + HOLD_MS - 100);
    expect(dbfsOf(before)).toBeLessThan(-60);
    const held = heardBetween(p, t0 + HOLD_MS + 200, tOut - 100);
    expect(held.length).toBeGreaterThan(8000 * 1.2);
    expect(dbfsOf(held)).toBeGreaterThan(-45);
    expect(holdShare(held, 8000)).toBeGreaterThan(0.8);
  });
});
