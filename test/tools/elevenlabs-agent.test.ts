/**
 * Tools on the `elevenlabs-agent` dialect, against the ElevenLabs Agents stand-in through a real bridge:
 * the checks every speech dialect passes (speech-dialect.ts: each kind of tool answered as
 * `client_tool_result {tool_call_id, result, is_error}`, the result the output as JSON text and
 * `is_error` set exactly for error outputs; hold audio, bad arguments, end_call after the goodbye), and
 * ElevenLabs' own: the tools live on the agent, so the socket declares nothing, and a client tool the
 * agent calls that the call's `tools` lack is an error result naming it; the idle reprompt as a
 * `user_message`.
 */
import { describe, expect, it } from 'vitest';
import type { ElevenLabsConversation } from '../../src/emulator/elevenlabs-agent/connection.js';
import { createElevenLabsEmulator } from '../../src/emulator/elevenlabs-agent/server.js';
import { startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';
import { answerOf, type ModelSession, type ModelStandIn, toolChecks } from './speech-dialect.js';

const AGENT = 'agent_tools_test';

/** The session's view for the checks: a call's answer is the client's `client_tool_result` to its id. */
function sessionOf(conn: ElevenLabsConversation): ModelSession {
  return {
    call: (name, args, speakMs) => conn.callTool(name, args, speakMs),
    answer(id) {
      const answer = conn.record.tool_calls.find((c) => c.id === id)?.answer as
        | { type: string; tool_call_id: string; result: string; is_error: boolean }
        | null
        | undefined;
      if (answer === null || answer === undefined) return undefined;
      expect(answer.type).toBe('client_tool_result');
      return { output: JSON.parse(answer.result) as Record<string, unknown>, isError: answer.is_error };
    },
    replies: () => conn.record.replies,
    notes: () => conn.record.notes,
  };
}

async function standIn(
  env: Record<string, string> = {},
): Promise<ModelStandIn & { conn(): ElevenLabsConversation }> {
  const em = createElevenLabsEmulator({ pingIntervalMs: 0 });
  await em.listen(0, '127.0.0.1');
  let conn: ElevenLabsConversation | undefined;
  return {
    env: {
      BOT_DIALECT: 'elevenlabs-agent',
      BOT_URL: `${em.base().replace(/^http/, 'ws')}/v1/convai/conversation`,
      BOT_AGENT_ID: AGENT,
      BOT_INSTRUCTIONS: 'Answer briefly. reply_ms=200',
      ...env,
    },
    async session() {
      conn = await em.waitForSession(1, 10_000);
      const c = conn;
      await waitFor(() => c.record.sent.includes('conversation_initiation_metadata'), 5_000, 'the metadata');
      return sessionOf(c);
    },
    conn: () => conn!,
    [Symbol.asyncDispose]: () => em.close(),
  };
}

describe('tools on the elevenlabs-agent dialect', () => {
  toolChecks(() => standIn(), { errorFlag: true });

  it('declares nothing on the socket; a client tool the call lacks is an error result naming it; the reprompt is a user message', async () => {
    await using model = await standIn({ BOT_IDLE: JSON.stringify({ reprompt_after_ms: 1000 }) });
    await using rig = await startRig({ env: { ...model.env, BOT_TOOLS: '["end_call","send_dtmf"]' } });
    await rig.call('el-unknown');
    const s = await model.session();
    const conn = model.conn();
    const initiation = conn.record.received.find((m) => m.type === 'conversation_initiation_client_data');
    expect(Object.keys(initiation!.message as object).sort()).toEqual([
      'conversation_config_override',
      'dynamic_variables',
      'type',
    ]);

    const transfer = await answerOf(s, s.call('transfer_to_sales', { team: 'b2b' }));
    expect(transfer.isError).toBe(true);
    expect(transfer.output).toMatchObject({ error: 'not_found' });
    expect(transfer.output.message).toMatch(/"transfer_to_sales".*end_call, send_dtmf/);

    await waitFor(() => conn.record.texts.length > 0, 5_000, 'the reprompt');
    expect(conn.record.texts[0]).toMatchObject({ type: 'user_message', text: '[silence 1 s]' });
    expect(s.notes()).toEqual([]);
  });
});
