/**
 * A dialect that says what surrounds its base64 audio (`audioTextAround`, src/media/providers/types.ts)
 * must say exactly what its `audioText` writes: the outbound writer frames that text in place, writing
 * only the base64 per chunk. Checked for every dialect that offers it, after its own start message, and
 * for the ones that must not (a per-chunk counter, a byte swap).
 */
import { describe, expect, it } from 'vitest';
import type { BridgeContext } from '../../src/context.js';
import { DIALECTS } from '../../src/media/providers/index.js';
import type { ProviderWire } from '../../src/media/providers/types.js';

const ctx = {} as BridgeContext;

function wire(name: keyof typeof DIALECTS, ...messages: object[]): ProviderWire {
  const w = DIALECTS[name].connect(ctx);
  for (const m of messages) w.start(Buffer.from(JSON.stringify(m)), false);
  w.format(undefined);
  return w;
}

/** Chunks of every length mod 3 (base64 padding of 0, 1 and 2 characters). */
const chunks = [160, 161, 320, 322].map((n) => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 37 + n) & 0xff;
  return b;
});

function expectAgreement(w: ProviderWire): void {
  const around = w.audioTextAround?.();
  expect(around).toBeDefined();
  for (const chunk of chunks) {
    expect(`${around!.head}${chunk.toString('base64')}${around!.tail}`).toBe(w.audioText(chunk));
  }
  // The text is JSON whose payload is the chunk.
  expect(JSON.stringify(JSON.parse(w.audioText(chunks[0]!)))).toContain(chunks[0]!.toString('base64'));
}

describe('audioTextAround agrees with audioText', () => {
  it('default (base64 encoding)', () => {
    const w = wire('default', {
      event: 'session_start',
      session_id: 's-1',
      media: { codec: 'slin', sample_rate: 8000, encoding: 'base64' },
    });
    expect(w.textAudio).toBe(true);
    expectAgreement(w);
  });

  it('twilio, with a stream id that JSON must escape', () => {
    const w = wire(
      'twilio',
      { event: 'connected', protocol: 'Call', version: '1.0.0' },
      {
        event: 'start',
        start: { streamSid: 'MZ"quoted\\', callSid: 'CA1', customParameters: {} },
        streamSid: 'MZ"quoted\\',
      },
    );
    expectAgreement(w);
    expect(JSON.parse(w.audioText(chunks[0]!))).toMatchObject({ streamSid: 'MZ"quoted\\' });
  });

  it('plivo, L16 at 16 kHz', () => {
    const w = wire('plivo', {
      event: 'start',
      start: {
        callId: 'c1',
        streamId: 's1',
        tracks: ['inbound'],
        mediaFormat: { encoding: 'audio/x-l16', sampleRate: 16000 },
      },
    });
    expectAgreement(w);
  });

  it('telnyx with G.711; none with L16, whose chunks are byte-swapped', () => {
    const start = (encoding: string) => ({
      event: 'start',
      start: {
        call_control_id: 'v3:1',
        media_format: { encoding, sample_rate: encoding === 'L16' ? 16000 : 8000, channels: 1 },
      },
      stream_id: 'st1',
    });
    expectAgreement(wire('telnyx', start('PCMU')));
    expect(wire('telnyx', start('L16')).audioTextAround?.()).toBeUndefined();
  });

  it('exotel numbers each chunk: it has none', () => {
    expect(DIALECTS.exotel.connect(ctx).audioTextAround).toBeUndefined();
  });
});
