/**
 * `end_call` after a 3 s goodbye: the model says goodbye (3 s of its tone, sent to the bridge at four
 * times real time) and calls end_call; the caller, an emulated provider of the default dialect that
 * reports each mark once the audio before it has played, hears all 3 s, then the bridge hangs up
 * (session_end and close 1000). The model gets its output and is asked for no further response.
 */
import { describe, expect, it } from 'vitest';
import { steadyToneSnrDb } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

const GOODBYE_MS = 3000;
const RATE = 8000;

describe('end_call', () => {
  it('hangs up only once the goodbye has played to the caller', async () => {
    await using rig = await startRig({ realtime: {}, env: { BOT_TOOLS: '["end_call"]' } });
    const call = new SyntheticCall({
      url: rig.mediaUrl,
      token: await rig.mediaToken(),
      sessionId: 'bye-call',
      customerPhone: '4915100000001',
      direction: 'inbound',
      format: { codec: 'slin', inputRate: RATE, outputRate: RATE, encoding: 'binary', chunkBytes: 320 },
      // Silence for longer than the goodbye: the bridge, not the caller, ends the call.
      audio: new Int16Array(RATE * 10),
      keepReceived: true,
    });
    const done = call.run();
    const conn = await rig.realtime!.waitForSession(1, 10_000);
    await waitFor(() => conn.record.sent.includes('session.updated'), 5_000, 'the model session');
    const callId = conn.callTool('end_call', { reason: 'the caller said goodbye' }, GOODBYE_MS);
    const report = await done;

    // All of the goodbye, then the hang-up.
    const heard = report.received;
    const toneSamples = heard.filter((v) => v !== 0).length;
    expect(toneSamples).toBeGreaterThanOrEqual(0.98 * (GOODBYE_MS / 1000) * RATE);
    expect(steadyToneSnrDb(heard, replyToneHz(0), RATE)).toBeGreaterThan(25);
    expect(report.closeCode).toBe(1000);
    const marks = report.ackedMarks.map((m) => m.name);
    expect(marks.at(-1)).toMatch(/^vbt:end:/);
    // The goodbye's own last mark played before the hang-up's.
    expect(report.ackedMarks.filter((m) => m.how === 'played').length).toBe(marks.length);
    // The model was told, and not asked to speak again.
    await waitFor(() => conn.record.toolOutputs.length === 1, 2_000, 'the function_call_output');
    expect(conn.record.toolOutputs[0]).toMatchObject({ call_id: callId });
    expect(JSON.parse(conn.record.toolOutputs[0]!.output)).toEqual({ ok: true });
    expect(conn.record.events.filter((e) => e.type === 'response.create')).toHaveLength(0);
  });
});
