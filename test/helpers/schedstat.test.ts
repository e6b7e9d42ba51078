/**
 * The pacing checks' allowance (schedstat.ts): it excuses the receiving process's own stalls and never
 * the bridge's. A bridge in the test process makes every moment say so, nothing is excused over them, and
 * the pacing checks refuse them; a bridge in its own process that stops shows in the gaps they judge.
 */
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { tonePcm16 } from './audio.js';
import { TestBot } from './bot.js';
import { burstPacing, expectPacedBurst } from './platform-socket.js';
import { interArrival } from './provider.js';
import { type Rig, startRig } from './rig.js';
import { expectBridgeElsewhere, gcPausedMs, type Moment, moment, stoppedMs } from './schedstat.js';
import { reach, waitFor } from './wait.js';

let rig: Rig | undefined;
let bot: TestBot | undefined;

afterEach(async () => {
  await rig?.close();
  rig = undefined;
  await bot?.close();
  bot = undefined;
});

/** A full collection of this process's heap (V8's own `gc`, reached without starting Node with it). */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** Two moments with a full collection of a heap grown by `mb` megabytes between them. */
async function aroundCollection(mb: number): Promise<[Moment, Moment]> {
  const held: number[][] = [];
  for (let i = 0; i < mb * 16; i++) held.push(Array.from({ length: 8192 }, (_, j) => j));
  const a = moment();
  collect();
  const b = moment();
  held.length = 0;
  // V8 reports the collection to the observer a little later.
  await waitFor(() => gcPausedMs(a.at, b.at) > 0, 1_000, 'the collection to be reported');
  return [a, b];
}

describe('the pacing allowance', () => {
  it("excuses the receiver's own collection while no bridge runs here, and nothing while one does", async () => {
    const [a, b] = await aroundCollection(32);
    expect(gcPausedMs(a.at, b.at)).toBeGreaterThan(0);
    expect(a.bridgeHere).toBe(false);
    expect(stoppedMs(a, b)).toBeGreaterThanOrEqual(gcPausedMs(a.at, b.at));
    expect(() => expectBridgeElsewhere([a, b])).not.toThrow();

    rig = await startRig({});
    const [c, d] = await aroundCollection(32);
    expect(gcPausedMs(c.at, d.at)).toBeGreaterThan(0);
    expect(c.bridgeHere).toBe(true);
    expect(stoppedMs(c, d)).toBe(0);
    expect(interArrival([c, d].map((m) => ({ ...m, data: Buffer.alloc(0) }))).own).toEqual([d.at - c.at]);
    expect(() => expectBridgeElsewhere([c, d])).toThrow(/process of its own/);
    expect(() => burstPacing([c, d])).toThrow(/process of its own/);
    await rig.close();
    rig = undefined;
    expect(moment().bridgeHere).toBe(false);
  });

  it('a bridge in its own process that stops twice for 200 ms shows in the gaps the pacing check judges', async () => {
    bot = await TestBot.start({ echo: false });
    const child = await startRig({ process: true, env: { BOT_URL: bot.url } });
    rig = child;
    const p = await child.call('stopped-1', { provider: { sampleRunDelay: true } });
    const conn = await bot.waitConnection();
    conn.ws.send(tonePcm16(440, 16000, 64000)); // 4 s
    // Stopped (SIGSTOP) 200 ms after 1 s and again after 2.5 s of the burst: two gaps the p99 of 199 sees
    // (each a little shorter where a busy receiver stamped the chunk before it late).
    for (const after of [50, 125]) {
      await waitFor(() => p.audio.length >= after, 4_000, `${after} chunks`);
      child.process.child.kill('SIGSTOP');
      await reach(performance.now() + 200);
      child.process.child.kill('SIGCONT');
    }
    await waitFor(() => p.audio.length >= 200, 6_000, 'the whole burst');
    const burst = p.audio.slice(0, 200);
    const { p99, worst } = burstPacing(burst);
    console.log(`a bridge stopped twice for 200 ms: inter-arrival p99 ${p99.toFixed(1)} ms; ${worst}`);
    expect(p99).toBeGreaterThan(100);
    expect(() => expectPacedBurst('stopped bridge', burst)).toThrow(
      /expected .* to be less than or equal to 25/,
    );
  });
});
