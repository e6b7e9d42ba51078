/**
 * Tools on the `deepgram-agent` dialect, against the Deepgram Voice Agent stand-in through a real bridge:
 * the checks every speech dialect passes (speech-dialect.ts: each kind of tool answered as
 * `FunctionCallResponse {id, name, content}`, hold audio, bad arguments, end_call after the goodbye),
 * and Deepgram's own: the tools declared in `agent.think.functions` after the tenant's own functions
 * (one of the same name replaced), each held to the end of the caller's turn (`defer_until_eot`); a
 * client-side function of the tenant's that is not a tool answered `not_found`; `FunctionCallCancelled`
 * cancelling a call in flight, which is then answered no more; the idle reprompt as `InjectUserMessage`.
 */
import { describe, expect, it } from 'vitest';
import type { DeepgramAgentConnection } from '../../src/emulator/deepgram-agent/connection.js';
import { createDeepgramAgentEmulator } from '../../src/emulator/deepgram-agent/server.js';
import { call as http } from '../helpers/http-call.js';
import { startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';
import { json, startToolServer } from './helpers.js';
import { answerOf, LOOKUP, type ModelSession, type ModelStandIn, toolChecks } from './speech-dialect.js';

const KEY = 'dg-tools-test-key';

/** The session's view for the checks: a call's answer is the client's `FunctionCallResponse` to its id. */
function sessionOf(conn: DeepgramAgentConnection): ModelSession {
  return {
    call: (name, args, speakMs) => conn.callTool(name, args, speakMs),
    answer(id) {
      const answer = conn.record.tool_calls.find((c) => c.id === id)?.answer as
        | { type: string; id: string; name: string; content: string }
        | null
        | undefined;
      if (answer === null || answer === undefined) return undefined;
      expect(Object.keys(answer).sort()).toEqual(['content', 'id', 'name', 'type']);
      expect(answer.type).toBe('FunctionCallResponse');
      return { output: JSON.parse(answer.content) as Record<string, unknown> };
    },
    replies: () => conn.record.replies,
    notes: () => conn.record.notes,
  };
}

async function standIn(
  env: Record<string, string> = {},
): Promise<ModelStandIn & { conn(): DeepgramAgentConnection }> {
  const em = createDeepgramAgentEmulator({ apiKey: KEY });
  await em.listen(0);
  let conn: DeepgramAgentConnection | undefined;
  return {
    env: {
      BOT_URL: em.wsUrl(),
      BOT_DIALECT: 'deepgram-agent',
      BOT_API_KEY: KEY,
      BOT_INSTRUCTIONS: 'Answer briefly. reply_ms=200',
      ...env,
    },
    async session() {
      conn = await em.waitForSession(1, 10_000);
      const c = conn;
      await waitFor(() => c.record.sent.includes('SettingsApplied'), 5_000, 'SettingsApplied');
      return sessionOf(c);
    },
    conn: () => conn!,
    [Symbol.asyncDispose]: () => em.close(),
  };
}

describe('tools on the deepgram-agent dialect', () => {
  toolChecks(() => standIn(), { errorFlag: false });

  it("declares the tools after the tenant's functions; a function of the tenant's that is no tool is not_found; the reprompt is a user text", async () => {
    const settings = {
      agent: {
        think: {
          provider: { type: 'open_ai', model: 'gpt-4o-mini' },
          functions: [
            { name: 'weather', description: 'Weather.', endpoint: { url: 'https://tools.example/w' } },
            { name: 'transfer', description: 'Transfers the call.', parameters: { type: 'object' } },
            { name: 'end_call', description: "The tenant's own, replaced." },
          ],
        },
      },
    };
    await using model = await standIn({
      BOT_SETTINGS: JSON.stringify(settings),
      BOT_IDLE: JSON.stringify({ reprompt_after_ms: 1000 }),
    });
    await using rig = await startRig({
      env: {
        ...model.env,
        BOT_TOOLS: JSON.stringify(['end_call', { ...LOOKUP, url: 'http://127.0.0.1:9/x' }]),
      },
    });
    await rig.call('dg-declare');
    const s = await model.session();
    const conn = model.conn();
    const sent = conn.record.settings as { agent: { think: { functions: Record<string, unknown>[] } } };
    const functions = sent.agent.think.functions;
    expect(functions.slice(0, 2)).toEqual(settings.agent.think.functions.slice(0, 2));
    expect(functions.slice(2).map((f) => f.name)).toEqual(['end_call', 'lookup_order']);
    for (const f of functions.slice(2)) {
      expect(Object.keys(f).sort()).toEqual(['defer_until_eot', 'description', 'name', 'parameters']);
      expect(f.defer_until_eot).toBe(true);
      expect((f.parameters as { type: string }).type).toBe('object');
    }
    expect(functions[3]!.parameters).toEqual(LOOKUP.parameters);

    const transfer = await answerOf(s, s.call('transfer', {}));
    expect(transfer.output).toMatchObject({ error: 'not_found' });
    expect(transfer.output.message).toMatch(/"transfer".*end_call, lookup_order/);

    // Caller and agent silent: the idle policy's reprompt, as a user text the agent answers.
    await waitFor(() => conn.record.texts.length > 0, 5_000, 'the reprompt');
    expect(conn.record.texts[0]).toMatchObject({ type: 'InjectUserMessage', text: '[silence 1 s]' });
    expect(s.notes()).toEqual([]);
  });

  it('FunctionCallCancelled cancels a call in flight: its webhook request is dropped and no answer goes', async () => {
    let aborted = false;
    await using server = await startToolServer((req, res) => {
      const { arguments: args } = JSON.parse(req.body) as { arguments: { order_id: string } };
      if (args.order_id !== 'SLOW') json(res, { status: 'shipped' });
      else res.on('close', () => (aborted = true));
    });
    await using model = await standIn();
    await using rig = await startRig({
      env: {
        ...model.env,
        BOT_TOOLS: JSON.stringify([{ ...LOOKUP, url: `${server.url}/orders`, timeout_ms: 10_000 }]),
        BOT_TOOL_SECRET: 'dg-tools-secret-0123',
      },
    });
    await rig.call('dg-cancel');
    const s = await model.session();
    const conn = model.conn();
    const slow = s.call('lookup_order', { order_id: 'SLOW' });
    await waitFor(() => server.requests.length === 1, 5_000, 'the webhook request');
    // The caller speaks: the stand-in withdraws the call, as Deepgram does on a barge-in.
    conn.speechStarted();
    await waitFor(() => conn.record.cancelled_calls.length === 1, 2_000, 'FunctionCallCancelled');
    expect(conn.record.cancelled_calls[0]).toMatchObject({ id: slow, name: 'lookup_order' });
    await waitFor(() => aborted, 2_000, 'the webhook request aborted');
    const metrics = async () => (await http(rig.http, 'GET', '/metrics')).text;
    await waitFor(
      async () =>
        (await metrics()).includes('voicebridge_tool_calls_total{tool="lookup_order",outcome="cancelled"} 1'),
      2_000,
      'the cancelled call counted',
      50,
    );
    // The next call is answered; the withdrawn one never is.
    const next = await answerOf(s, s.call('lookup_order', { order_id: 'B2' }));
    expect(next.output).toEqual({ status: 'shipped' });
    expect(s.answer(slow)).toBeUndefined();
    expect(conn.record.received.filter((m) => m.type === 'FunctionCallResponse')).toHaveLength(1);
    expect(s.notes()).toEqual([]);
  });
});
