/**
 * Property-based bad input on the jambonz and Asterisk wires (fast-check): whatever a platform sends,
 * the first frame either starts a call or is refused with `bad_session_start`, and every later frame is
 * read as a call frame or refused with a BridgeError of the skip kind (the session reports it and goes
 * on); nothing else is ever thrown. Frames are built from each dialect's own vocabulary with random
 * values, beside random bytes, so the cases reach the parsers' branches rather than stop at the first.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BridgeContext } from '../../src/context.js';
import { isBridgeError } from '../../src/errors.js';
import { DIALECTS } from '../../src/media/providers/index.js';
import type { ProviderWire } from '../../src/media/providers/types.js';

const CTX = {} as BridgeContext;
const SKIP = new Set(['bad_json', 'unknown_event', 'invalid_field', 'odd_length']);

const value = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('8000', '16000', 'ulaw', 'slin16', 'playout', 'cleared', '5', 'm1', 'flush-1', ''),
  fc.array(fc.string(), { maxLength: 2 }),
  fc.dictionary(fc.constantFrom('name', 'event', 'sampleRate'), fc.oneof(fc.string(), fc.integer())),
);

const jambonzText = fc
  .oneof(
    fc.record(
      {
        type: fc.oneof(fc.constantFrom('mark', 'playDone', 'killAudio'), value),
        event: fc.oneof(fc.constantFrom('dtmf'), value),
        dtmf: value,
        data: fc.oneof(fc.record({ name: value, event: value }, { requiredKeys: [] }), value),
      },
      { requiredKeys: [] },
    ),
    fc.record(
      { callSid: value, sampleRate: value, mixType: value, bidirectionalAudio: value, metadata: value },
      { requiredKeys: [] },
    ),
  )
  .map((o) => JSON.stringify(o));

const asteriskNames = fc.constantFrom(
  'MEDIA_START',
  'DTMF_END',
  'MEDIA_XOFF',
  'MEDIA_XON',
  'MEDIA_MARK_PROCESSED',
  'STATUS',
  'QUEUE_DRAINED',
  'HANGUP',
  'media_xoff',
);
const asteriskText = fc.oneof(
  fc
    .tuple(
      asteriskNames,
      fc.array(
        fc.tuple(
          fc.constantFrom('digit', 'correlation_id', 'format', 'optimal_frame_size', 'channel_id', 'x'),
          fc.string({ maxLength: 8 }),
        ),
        { maxLength: 4 },
      ),
      fc.array(fc.string({ maxLength: 6 }), { maxLength: 2 }),
    )
    .map(([n, kv, words]) => [n, ...kv.map(([k, v]) => `${k}:${v}`), ...words].join(' ')),
  fc
    .record(
      {
        event: fc.oneof(asteriskNames, value),
        digit: value,
        correlation_id: value,
        format: value,
        optimal_frame_size: value,
        channel_id: value,
        channel_variables: value,
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
);

type Frame = { data: Buffer; isBinary: boolean };
const frame = (textArb: fc.Arbitrary<string>): fc.Arbitrary<Frame> =>
  fc.oneof(
    textArb.map((t) => ({ data: Buffer.from(t), isBinary: false })),
    fc.string().map((t) => ({ data: Buffer.from(t), isBinary: false })),
    fc.uint8Array({ maxLength: 700 }).map((b) => ({ data: Buffer.from(b), isBinary: true })),
  );

/** A good first frame, so the later frames reach a live call's parser. */
const GOOD_START: Record<'jambonz' | 'asterisk', string[]> = {
  jambonz: [JSON.stringify({ callSid: 'c1', sampleRate: 16000, mixType: 'mono' })],
  asterisk: [
    'MEDIA_START connection_id:a channel_id:c1 format:ulaw optimal_frame_size:160 ptime:20',
    JSON.stringify({ event: 'MEDIA_START', channel_id: 'c1', format: 'slin16', optimal_frame_size: 640 }),
  ],
};

function refusedWith(fn: () => unknown, codes: ReadonlySet<string>): void {
  try {
    fn();
  } catch (err) {
    expect(isBridgeError(err), String(err)).toBe(true);
    expect(codes.has((err as { code: string }).code), (err as Error).message).toBe(true);
  }
}

describe.each([
  ['jambonz', jambonzText],
  ['asterisk', asteriskText],
] as const)('%s wire under random frames', (name, textArb) => {
  it('refuses a first frame it cannot start with only as bad_session_start', () => {
    fc.assert(
      fc.property(frame(textArb), (f) => {
        refusedWith(
          () => DIALECTS[name].connect(CTX).start(f.data, f.isBinary),
          new Set(['bad_session_start']),
        );
      }),
      { numRuns: 2_000 },
    );
  });

  it('reads or skips every frame of a live call, the wire staying usable', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...GOOD_START[name]),
        fc.array(frame(textArb), { maxLength: 20 }),
        (start, frames) => {
          const wire: ProviderWire = DIALECTS[name].connect(CTX);
          expect(wire.start(Buffer.from(start), false)?.session_id).toBe('c1');
          wire.format(undefined);
          for (const f of frames) {
            refusedWith(() => wire.frame(f.data, f.isBinary), SKIP);
            // The outbound side keeps framing whatever came in.
            expect(typeof wire.markFrame('x')).toBe('string');
          }
          const clear = wire.clearFrame();
          expect(typeof clear === 'string' || Array.isArray(clear)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});
