/**
 * The idle policy. On a manual clock: the reprompt at reprompt_after_ms and the hang-up at
 * hangup_after_ms counted from the later of the caller's last speech and the end of the bot's audio;
 * the bot's answer to the reprompt does not restart the count, the caller speaking does, and a tool in
 * flight holds it. End to end on a silent caller (real time): the model gets `[silence N s]` and a
 * response request at reprompt_after_ms, and the caller the hang-up at hangup_after_ms, each within
 * 250 ms.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { generateTone } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { IdleWatch } from '../../src/tools/idle.js';
import { ManualClock } from '../helpers/clock.js';
import { startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

const R = 2000;
const H = 4000;

function watch() {
  const clock = new ManualClock(0);
  const acts: [string, number, number][] = [];
  const idle = new IdleWatch({
    clock,
    policy: { reprompt_after_ms: R, hangup_after_ms: H },
    codec: 'slin',
    reprompt: (ms) => acts.push(['reprompt', clock.now(), ms]),
    hangup: (ms) => acts.push(['hangup', clock.now(), ms]),
  });
  return { clock, idle, acts };
}

const voiced = Buffer.from(generateTone(300, 16_000, 320, 0.3).buffer);
const hiss = Buffer.from(generateTone(300, 16_000, 320, 0.001).buffer);

describe('idle policy', () => {
  it('counts from the later of the caller speech and the bot audio; the reprompt answer does not restart it', () => {
    const w = watch();
    w.clock.advance(500);
    w.idle.callerAudio(voiced);
    w.clock.advance(500);
    w.idle.callerAudio(hiss); // below -40 dBFS: not speech
    w.idle.botAudio(1000 + 700); // the bot answers, heard until 1700
    w.clock.advance(R + 699);
    expect(w.acts).toEqual([]);
    w.clock.advance(1);
    expect(w.acts).toEqual([['reprompt', 1700 + R, R]]);
    w.idle.botAudio(w.clock.now() + 1500); // the model's answer to the reprompt
    w.clock.advance(H - R - 1);
    expect(w.acts).toHaveLength(1);
    w.clock.advance(1);
    expect(w.acts[1]).toEqual(['hangup', 1700 + H, H]);
  });

  it('the caller speaking after the reprompt starts again; a tool in flight holds the count', () => {
    const w = watch();
    w.clock.advance(R);
    expect(w.acts.map((a) => a[0])).toEqual(['reprompt']);
    w.clock.advance(1000);
    w.idle.callerAudio(voiced);
    const spoke = w.clock.now();
    w.idle.toolStarted();
    w.clock.advance(H + 1000);
    expect(w.acts).toHaveLength(1);
    w.idle.toolFinished();
    const out = w.clock.now();
    w.clock.advance(R);
    expect(w.acts[1]).toEqual(['reprompt', out + R, R]);
    expect(spoke).toBeLessThan(out);
    w.clock.advance(H - R);
    expect(w.acts[2]).toEqual(['hangup', out + H, H]);
    w.idle.end();
  });

  it('on a silent caller: reprompt at reprompt_after_ms, hang-up at hangup_after_ms, each within 250 ms', async () => {
    await using rig = await startRig({
      realtime: {},
      env: {
        BOT_IDLE: JSON.stringify({ reprompt_after_ms: R, hangup_after_ms: H }),
        BOT_INSTRUCTIONS: 'reply_ms=600',
      },
    });
    const rate = 8000;
    const call = new SyntheticCall({
      url: rig.mediaUrl,
      token: await rig.mediaToken(),
      sessionId: 'idle-call',
      customerPhone: '4915100000002',
      direction: 'inbound',
      format: { codec: 'slin', inputRate: rate, outputRate: rate, encoding: 'binary', chunkBytes: 320 },
      audio: new Int16Array(rate * 10),
      keepReceived: true,
    });
    const done = call.run();
    let closedAt = 0;
    void call.leg.closed.then(() => {
      closedAt = performance.now();
    });
    const conn = await rig.realtime!.waitForSession(1, 10_000);
    // The count starts with the session, which dials the model at once: its connection is the origin.
    const t0 = conn.record.opened;
    const prompts = () =>
      conn.record.events.filter(
        (e) =>
          e.type === 'conversation.item.create' &&
          (e.event as { item: { content?: { text?: string }[] } }).item.content?.[0]?.text ===
            '[silence 2 s]',
      );
    await waitFor(() => prompts().length === 1, R + 2000, 'the reprompt', 2);
    const repromptAt = performance.now() - t0;
    await waitFor(
      () => conn.record.events.some((e) => e.type === 'response.create'),
      1000,
      'its response request',
    );
    const report = await done;
    const hangupAt = closedAt - t0;
    expect(report.closeCode).toBe(1000);
    expect(Math.abs(repromptAt - R)).toBeLessThan(250);
    expect(Math.abs(hangupAt - H)).toBeLessThan(250);
    // The model answered the reprompt (600 ms of its tone), and the caller heard it before the hang-up.
    expect(report.received.filter((v) => v !== 0).length).toBeGreaterThan(0.5 * rate);
    expect(prompts()).toHaveLength(1);
  });
});
