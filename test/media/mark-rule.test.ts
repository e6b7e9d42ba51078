/**
 * The mark rule end to end, on real sockets at real time: a Twilio-dialect bot behind `/v1/media`, whose
 * provider never reports marks (the voice API's documents do not say it does). The bot sends 1 s of
 * audio, `m1`, 0.5 s, `m2`; both marks must come back, each no earlier than the caller has played the
 * audio before it and at most 250 ms after, measured where the caller received that audio (a caller
 * plays what arrives, in order, at real time). (A provider that reports, early or late, is covered on a
 * hand-driven clock: test/audio/playout.test.ts, test/media/outbound.test.ts.)
 */
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterEach, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import type { AudioArrival } from '../helpers/provider.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

let rig: InProcessRig | undefined;
let bot: WebSocketServer | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
  for (const c of bot?.clients ?? []) c.terminate();
  await new Promise<void>((resolve) => (bot === undefined ? resolve() : bot.close(() => resolve())));
  bot = undefined;
});

/** A Twilio-dialect bot: on `start`, 1 s of µ-law, mark m1, 0.5 s, mark m2; it keeps the echoed marks. */
async function twilioBot(): Promise<{ url: string; marks: { name: string; at: number }[] }> {
  const marks: { name: string; at: number }[] = [];
  bot = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => bot!.once('listening', () => resolve()));
  bot.on('connection', (ws: WebSocket) => {
    ws.on('message', (data: Buffer) => {
      const ev = JSON.parse(data.toString('utf8')) as {
        event: string;
        start?: { streamSid: string };
        mark?: { name: string };
      };
      if (ev.event === 'mark') marks.push({ name: ev.mark!.name, at: performance.now() });
      if (ev.event !== 'start') return;
      const streamSid = ev.start!.streamSid;
      const media = (ms: number) =>
        ws.send(
          JSON.stringify({
            event: 'media',
            streamSid,
            media: { payload: Buffer.alloc(ms * 8, 0x55).toString('base64') },
          }),
        );
      const mark = (name: string) => ws.send(JSON.stringify({ event: 'mark', streamSid, mark: { name } }));
      media(1000);
      mark('m1');
      media(500);
      mark('m2');
    });
  });
  return { url: `ws://127.0.0.1:${(bot.address() as AddressInfo).port}/bot`, marks };
}

/** When a caller playing what arrived, in order and at real time, had played `bytes` of it (8 a ms). */
function playedAt(audio: readonly AudioArrival[], bytes: number): number {
  let end = Number.NEGATIVE_INFINITY;
  let pos = 0;
  for (const a of audio) {
    end = Math.max(end, a.at) + a.data.length / 8;
    pos += a.data.length;
    if (pos >= bytes) return end - (pos - bytes) / 8;
  }
  throw new Error(`only ${pos} of ${bytes} bytes arrived`);
}

async function call() {
  const b = await twilioBot();
  rig = await startRig({ env: { BOT_URL: b.url, BOT_DIALECT: 'twilio' } });
  const p = await rig.call('mark-rule', { start: { media: { codec: 'pcmu', sample_rate: 8000 } } });
  await waitFor(() => b.marks.length === 2, 5_000, 'both marks back at the bot');
  return { p, marks: b.marks };
}

it('a provider that never reports marks: both come back, each within 250 ms of its audio playing at the caller', async () => {
  const { p, marks } = await call();
  expect(marks.map((m) => m.name)).toEqual(['m1', 'm2']);
  const lines: string[] = [];
  for (const [i, bytes] of [8000, 12_000].entries()) {
    const played = playedAt(p.audio, bytes);
    const after = marks[i]!.at - played;
    lines.push(`${marks[i]!.name} ${after.toFixed(1)} ms after its audio played at the caller`);
    expect(after).toBeGreaterThanOrEqual(0);
    expect(after).toBeLessThanOrEqual(250);
  }
  console.log(`mark rule, no provider reports: ${lines.join('; ')}`);
  // The provider got each mark's frame, behind its audio.
  expect(p.events.filter((e) => e.event === 'mark').map((e) => e.name)).toEqual(['m1', 'm2']);
});
