/**
 * A bridge that breaks a platform's rule is caught the way the real platform would catch it: each
 * fake here breaks one rule on purpose, and the emulated provider records the breach and does what the
 * platform does (Vonage closes, Exotel gaps, Asterisk drops, AudioSocket drops what is queued ahead).
 * Also: Twilio's marks wait for playout and come back on clear, a mark sent ahead of its audio shows in
 * the timeline, and malformed frames from the bridge never crash the emulator.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { generateTone } from '../../src/audio/tone.js';
import { type CallReport, SyntheticCall } from '../../src/emulator/caller.js';
import { DIALECTS, type DialectName, dialectRate } from '../../src/emulator/dialects/index.js';
import {
  encode,
  type FakeBridge,
  markMessage,
  mediaMessage,
  onFirstAudio,
  type Script,
  startFake,
} from './dialect-fakes.js';

const fakes: FakeBridge[] = [];
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()));
});

async function callAgainst(
  dialect: DialectName,
  rate: number,
  script: Script,
  extra: { seconds?: number; settings?: Record<string, unknown>; protocol?: string } = {},
): Promise<{ report: CallReport; fake: FakeBridge }> {
  const fake = await startFake(dialect, rate, script, extra.protocol);
  fakes.push(fake);
  const seconds = extra.seconds ?? 1;
  const report = await new SyntheticCall({
    url: fake.url,
    sessionId: dialect === 'audiosocket' ? randomUUID() : `CA${randomUUID().replaceAll('-', '')}`,
    customerPhone: '15550100',
    direction: 'inbound',
    dialect,
    rate,
    format:
      dialect === 'default'
        ? { codec: 'slin', inputRate: rate, outputRate: rate, encoding: 'binary', chunkBytes: rate / 25 }
        : undefined,
    settings: extra.settings,
    audio: generateTone(440, rate, Math.round(rate * seconds), 0.5),
    keepReceived: true,
    tailMs: 300,
  }).run();
  return { report, fake };
}

const tone = (rate: number, ms: number) => generateTone(1000, rate, Math.round((rate * ms) / 1000), 0.5);

describe('platform rules the emulated providers enforce', () => {
  it('vonage closes the call on a binary message that is not exactly 20 ms', async () => {
    const { report, fake } = await callAgainst(
      'vonage',
      16000,
      onFirstAudio((peer) => peer.sendBinary(encode('slin', tone(16000, 10)))),
    );
    expect(report.breaches).toMatchObject([{ rule: 'frame_size', effect: 'closed' }]);
    expect(report.breaches[0]!.detail).toContain('unexpected frame size 320, when required 640');
    expect(report.state).toBe('failed');
    await expect.poll(() => fake.peers[0]!.closeCode).toBe(1006);
    // The call ended early: the caller did not get to send its whole second.
    expect(report.secondsSent).toBeLessThan(1);
  });

  it('exotel gaps on a chunk that is not a multiple of 320 bytes or under 3.2 KB, and plays good ones', async () => {
    const { report } = await callAgainst(
      'exotel',
      8000,
      onFirstAudio((peer) => {
        peer.sendText(mediaMessage(peer, encode('slin', tone(8000, 201))) as string); // 3,216 B: not x320
        peer.sendText(mediaMessage(peer, encode('slin', tone(8000, 100))) as string); // 1,600 B: under 3.2 KB
        peer.sendText(mediaMessage(peer, encode('slin', tone(8000, 200))) as string); // 3,200 B: good
      }),
    );
    expect(report.breaches.map((b) => [b.rule, b.effect])).toEqual([
      ['chunk_size', 'gap'],
      ['chunk_size', 'gap'],
    ]);
    const kinds = report.timeline.map((e) => e.kind);
    expect(kinds.slice(0, 3)).toEqual(['gap', 'gap', 'audio']);
    expect(report.received.length).toBe(320 + 1600); // two 20 ms gaps, then the good 200 ms
  });

  it('asterisk sends MEDIA_XOFF at its mark, drops data sent after it until MEDIA_XON, and drops partial frames', async () => {
    const { report, fake } = await callAgainst(
      'asterisk',
      8000,
      onFirstAudio((peer) => {
        // 12 frames at once passes the XOFF mark of 10.
        peer.sendBinary(encode('pcmu', tone(8000, 240)));
        // A bridge that ignores XOFF keeps sending 100 ms later: dropped.
        setTimeout(() => peer.sendBinary(encode('pcmu', tone(8000, 40))), 100);
        // After XON (queue below 5 frames, ~150 ms later) data is taken again, but only whole frames.
        setTimeout(() => peer.sendBinary(encode('pcmu', tone(8000, 25))), 400);
      }),
      { settings: { xoffFrames: 10, xonFrames: 5, maxFrames: 20 } },
    );
    const control = fake.peers[0]!.control.map(String);
    expect(control).toContain('MEDIA_XOFF');
    expect(control).toContain('MEDIA_XON');
    expect(control.indexOf('MEDIA_XOFF')).toBeLessThan(control.indexOf('MEDIA_XON'));
    expect(report.flow).toEqual({ xoff: 1, xon: 1 });
    expect(report.breaches.map((b) => [b.rule, b.effect])).toEqual([
      ['after_xoff', 'dropped'],
      ['partial_frame', 'dropped'],
    ]);
    // 12 frames, then the 20 ms whole frame of the last message (its 5 ms tail dropped).
    expect(report.received.length).toBe(12 * 160 + 160);
  });

  it('asterisk closes on a message over 65,500 bytes', async () => {
    const { report } = await callAgainst(
      'asterisk',
      8000,
      onFirstAudio((peer) => peer.sendBinary(new Uint8Array(65_600).fill(0xff))),
    );
    expect(report.breaches).toMatchObject([{ rule: 'message_size', effect: 'closed' }]);
    expect(report.state).toBe('failed');
  });

  it('audiosocket drops audio queued ahead of playout', async () => {
    const { report } = await callAgainst(
      'audiosocket',
      8000,
      onFirstAudio((peer) => {
        for (let i = 0; i < 10; i++) peer.sendBinary(encode('slin', tone(8000, 20)));
      }),
    );
    // 60 ms may wait behind the frame playing: frames 1-5 play (one playing, four queued), 6-10 are dropped.
    expect(report.breaches.filter((b) => b.rule === 'queued_ahead')).toHaveLength(5);
    expect(report.received.length).toBe(5 * 160);
  });

  it('telnyx drops media under 20 ms', async () => {
    const { report } = await callAgainst(
      'telnyx',
      8000,
      onFirstAudio((peer) => peer.sendText(mediaMessage(peer, encode('pcmu', tone(8000, 10))) as string)),
    );
    expect(report.breaches).toMatchObject([{ rule: 'media_duration', effect: 'dropped' }]);
    expect(report.received.length).toBe(0);
  });

  it('plivo drops playAudio in a content type it does not take', async () => {
    const { report } = await callAgainst(
      'plivo',
      8000,
      onFirstAudio((peer) =>
        peer.sendText(
          JSON.stringify({
            event: 'playAudio',
            media: { contentType: 'audio/wav', sampleRate: 8000, payload: '' },
          }),
        ),
      ),
    );
    expect(report.breaches).toMatchObject([{ rule: 'play_format', effect: 'dropped' }]);
  });

  it('jambonz hangs up on a bridge that does not answer its subprotocol', async () => {
    const { report } = await callAgainst('jambonz', 16000, () => {}, { protocol: 'something-else' });
    // The handshake itself fails, as it does for jambonz's WebSocket client.
    expect(report.state).toBe('failed');
    expect(report.errors.map((e) => e.message).join()).toMatch(/subprotocol/);
    expect(report.secondsSent).toBe(0);
  });

  it('twilio drops messages naming another stream', async () => {
    const { report } = await callAgainst(
      'twilio',
      8000,
      onFirstAudio((peer) =>
        peer.sendText(JSON.stringify({ event: 'media', streamSid: 'MZother', media: { payload: 'AAAA' } })),
      ),
    );
    expect(report.breaches).toMatchObject([{ rule: 'stream_id', effect: 'dropped' }]);
  });

  it('telnyx with reorder sends chunks out of order, each numbered so the bridge can order them', async () => {
    const { fake } = await callAgainst('telnyx', 8000, () => {}, {
      settings: { reorder: true },
      seconds: 0.2,
    });
    const chunks = fake.peers[0]!.control.filter((m) => (m as { event?: string }).event === 'media').map(
      (m) => Number((m as { media: { chunk: string } }).media.chunk),
    );
    expect(chunks).toEqual([2, 1, 4, 3, 6, 5, 8, 7, 10, 9]);
  });
});

describe('playback acknowledgements', () => {
  it('twilio returns a mark only after the audio before it played, and every pending mark on clear', async () => {
    const sent: Record<string, number> = {};
    const { report, fake } = await callAgainst(
      'twilio',
      8000,
      onFirstAudio((peer) => {
        // 600 ms in one message, then a mark: Twilio plays it at real time, then returns the mark.
        peer.sendText(mediaMessage(peer, encode('pcmu', tone(8000, 600))) as string);
        peer.sendText(markMessage(peer, 'first'));
        sent.first = performance.now();
        peer.sendText(mediaMessage(peer, encode('pcmu', tone(8000, 2000))) as string);
        peer.sendText(markMessage(peer, 'second'));
        peer.sendText(markMessage(peer, 'third'));
        setTimeout(() => {
          sent.clear = performance.now();
          peer.sendText(JSON.stringify({ event: 'clear', streamSid: peer.ids.stream }));
        }, 900);
      }),
      { seconds: 1.5 },
    );
    expect(fake.peers[0]!.acks).toEqual(['first', 'second', 'third']);
    expect(report.ackedMarks.map((m) => [m.name, m.how])).toEqual([
      ['first', 'played'],
      ['second', 'cleared'],
      ['third', 'cleared'],
    ]);
    const first = report.ackedMarks[0]!;
    const audioStart = report.timeline.find((e) => e.kind === 'audio')!.atMs;
    expect(first.atMs - audioStart).toBeGreaterThanOrEqual(590);
    // About 900 ms played before the clear took the rest of the 2.6 s sent.
    expect(report.received.length / 8000).toBeGreaterThan(0.8);
    expect(report.received.length / 8000).toBeLessThan(1.1);
    expect(report.clears).toBe(1);
  });

  it('a mark the bridge sends ahead of its audio shows ahead of it in the timeline', async () => {
    const { report } = await callAgainst(
      'jambonz',
      16000,
      onFirstAudio((peer) => {
        peer.sendText(markMessage(peer, 'early'));
        peer.sendBinary(encode('slin', tone(16000, 200)));
      }),
    );
    const kinds = report.timeline.map((e) => e.kind);
    expect(kinds.indexOf('mark')).toBeLessThan(kinds.indexOf('audio'));
  });

  it('jambonz clearMarks and killAudio send pending marks back as cleared', async () => {
    const { fake, report } = await callAgainst(
      'jambonz',
      16000,
      onFirstAudio((peer) => {
        peer.sendBinary(encode('slin', tone(16000, 500)));
        peer.sendText(markMessage(peer, 'a'));
        peer.sendText(JSON.stringify({ type: 'clearMarks' }));
        peer.sendBinary(encode('slin', tone(16000, 500)));
        peer.sendText(markMessage(peer, 'b'));
        setTimeout(() => peer.sendText(JSON.stringify({ type: 'killAudio' })), 100);
      }),
    );
    const events = fake.peers[0]!.control.filter((m) => (m as { type?: string }).type === 'mark');
    expect(events).toEqual([
      { type: 'mark', data: { name: 'a', event: 'cleared' } },
      { type: 'mark', data: { name: 'b', event: 'cleared' } },
    ]);
    expect(report.received.length / 16000).toBeLessThan(0.2);
  });
});

describe('hang-up from the bridge', () => {
  it.each([
    ['asterisk', 'HANGUP'],
    ['jambonz', '{"type":"disconnect"}'],
  ] as const)("%s ends the call on the bridge's %s", async (dialect, command) => {
    const { report } = await callAgainst(
      dialect,
      dialectRate(dialect, 16000),
      onFirstAudio((peer) => setTimeout(() => peer.sendText(command), 200)),
      { seconds: 2 },
    );
    expect(report.state).toBe('ended');
    expect(report.secondsSent).toBeLessThan(0.5);
  });

  it.each(['audiosocket', 'vonage', 'twilio'] as const)(
    '%s ends the call when the bridge hangs up',
    async (dialect) => {
      const { report } = await callAgainst(
        dialect,
        dialectRate(dialect, 8000),
        onFirstAudio((peer) => setTimeout(() => peer.close(), 200)),
        { seconds: 2 },
      );
      expect(report.state).toBe('ended');
      expect(report.secondsSent).toBeLessThan(0.5);
    },
  );
});

describe('malformed frames from the bridge', () => {
  const junk: (string | Uint8Array)[] = [
    '',
    'not json',
    '{',
    '[]',
    'null',
    '{"event":null}',
    '{"event":"media"}',
    '{"event":"media","media":{"payload":"@@@"}}',
    '{"event":"media","streamSid":null,"media":{"payload":7}}',
    '{"type":"mark","data":null}',
    '{"action":"notify"}',
    '{"event":"playAudio","media":{"contentType":"audio/x-l16","sampleRate":8000,"payload":"AAA="}}',
    'MARK_MEDIA',
    'flush_media',
    new Uint8Array(0),
    new Uint8Array(1),
    new Uint8Array(3).fill(0xff),
  ];
  it.each(DIALECTS.filter((d) => d !== 'vonage'))(
    '%s records them and completes the call',
    async (dialect) => {
      const rate = dialectRate(dialect, 8000);
      const { report } = await callAgainst(
        dialect,
        rate,
        onFirstAudio((peer) => {
          for (const j of junk) typeof j === 'string' ? peer.sendText(j) : peer.sendBinary(j);
          for (let i = 0; i < 200; i++) {
            const n = (i * 7919) % 97;
            const bytes = new Uint8Array(n).map((_, k) => (k * 31 + i) & 0xff);
            peer.sendBinary(bytes);
          }
        }),
        { seconds: 0.6 },
      );
      expect(report.state).toBe('ended');
      expect(report.secondsSent).toBeGreaterThanOrEqual(0.6);
      expect(report.breaches.length + report.errors.length).toBeGreaterThan(0);
    },
  );

  it('vonage (which closes on any odd size) survives malformed text frames', async () => {
    const { report } = await callAgainst(
      'vonage',
      16000,
      onFirstAudio((peer) => {
        for (const j of junk) if (typeof j === 'string') peer.sendText(j);
      }),
      { seconds: 0.6 },
    );
    expect(report.state).toBe('ended');
    expect(report.errors.length + report.breaches.length).toBeGreaterThan(0);
  });
});
