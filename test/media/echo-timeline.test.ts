/**
 * `builtin:echo` is a live stream: the caller's own audio, back after ECHO_DELAY_MS. When the caller's
 * first audio reaches the bridge late, all at once (the bridge was held up as the call began), the echo
 * of it goes back at once and the rest of the call is echoed ECHO_DELAY_MS after it came, as any later
 * hold-up is caught up: the late start is not kept as a standing delay for the rest of the call (the
 * live-stream rule of src/audio/playout.ts). A bridge on a clock this test drives by hand, real sockets.
 */
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ManualClock } from '../helpers/clock.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

/** 20 ms of 8 kHz PCM16, every sample `k + 1` (times 100): which chunk of the caller's it is. */
function chunk(k: number): Buffer {
  const b = Buffer.alloc(320);
  for (let i = 0; i < 160; i++) b.writeInt16LE((k + 1) * 100, i * 2);
  return b;
}

/** Chunks the bridge has read from the caller (`in`) or sent it (`out`). */
async function frames(rig: InProcessRig, way: 'in' | 'out'): Promise<number> {
  const m = await (way === 'in' ? rig.bridge.ctx.metrics.framesIn : rig.bridge.ctx.metrics.framesOut).get();
  return m.values.find((v) => v.labels.leg === 'caller')?.value ?? 0;
}

describe('the echo of a caller whose first audio came late', () => {
  it('goes back at once, and the rest ECHO_DELAY_MS after each chunk came: no standing delay', async () => {
    const clock = new ManualClock(0);
    // The bot at the caller's rate: no resampling, so each chunk comes back byte for byte.
    const rig = await startRig({
      env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '200', BOT_SAMPLE_RATE: '8000' },
      bridgeOptions: { clock },
    });
    closers.push(() => rig.close());
    const ws = new WebSocket(rig.mediaUrl, {
      headers: { authorization: `Bearer ${await rig.mediaToken()}` },
    });
    closers.push(() => ws.terminate());
    /** Each echoed chunk (by its number) and the calls' clock when it came back. */
    const back: { k: number; at: number }[] = [];
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) back.push({ k: data.readInt16LE(0) / 100 - 1, at: clock.now() });
    });
    await new Promise<void>((resolve) => ws.once('open', () => resolve()));
    ws.send(
      JSON.stringify({
        event: 'session_start',
        session_id: 'echo-late-start',
        media: { codec: 'slin', sample_rate: 8000, encoding: 'binary', chunk_bytes: 320 },
      }),
    );
    await waitFor(() => rig.bridge.ctx.sessions.count() === 1, 3_000, 'the session to start');
    // The caller's first 300 ms (chunks 0-14, made at 0-280 ms) reach the bridge at once, at 280 ms.
    const LATE = 15;
    const CHUNKS = 60;
    clock.advance(280);
    for (let k = 0; k < LATE; k++) ws.send(chunk(k));
    await waitFor(async () => (await frames(rig, 'in')) === LATE, 3_000, 'the late chunks at the bridge');
    // Then one chunk every 20 ms, as made (chunk k at k * 20 ms). The clock moves only once the bridge
    // has each and this socket has what the bridge sent, so each arrival is timed exactly.
    for (let k = LATE; k < CHUNKS; k++) {
      clock.advance(20);
      ws.send(chunk(k));
      await waitFor(async () => (await frames(rig, 'in')) === k + 1, 3_000, `chunk ${k} at the bridge`);
      await waitFor(async () => (await frames(rig, 'out')) === back.length, 3_000, 'the echo so far');
    }
    // The rest of the echo, the clock moved on as before.
    for (let t = 0; t < 300; t += 20) {
      clock.advance(20);
      await waitFor(async () => (await frames(rig, 'out')) === back.length, 3_000, 'the echo so far');
    }
    // In order, and none lost.
    expect(back.map((b) => b.k)).toEqual(Array.from({ length: back.length }, (_, k) => k));
    // The late ones go back at once, ECHO_DELAY_MS after they came; every later one ECHO_DELAY_MS after
    // it was made and came. Anchored at its first chunk, chunk k would leave at 480 + 20 k - 40.
    for (const { k, at } of back) expect(at, `chunk ${k}`).toBe(k < LATE ? 480 : k * 20 + 200);
    expect(back).toHaveLength(CHUNKS);
  }, 30_000);
});
