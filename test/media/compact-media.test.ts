/**
 * The default dialect reads base64 media events in their compact form without parsing them
 * (compactMediaPayload in src/media/protocol.ts, DefaultWire's #compactAudio). Property: for any text
 * frame, what the wire makes of it (the audio bytes, or the error code it throws) is what the full parse
 * makes of it: parseProviderEvent, then fromBase64 and the whole-sample rule, as the wire did before.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromBase64 } from '../../src/audio/codec.js';
import { isBridgeError } from '../../src/errors.js';
import { resolveFormat } from '../../src/media/format.js';
import { COMPACT_MEDIA_HEAD, compactMediaPayload, parseProviderEvent } from '../../src/media/protocol.js';
import { DefaultWire } from '../../src/media/providers/default.js';

type Outcome = { audio: number[] } | { code: string } | { kind: string };

function viaWire(wire: DefaultWire, text: string): Outcome {
  try {
    const f = wire.frame(Buffer.from(text, 'utf8'), false);
    return f.kind === 'audio' ? { audio: [...f.audio] } : { kind: f.kind };
  } catch (err) {
    if (!isBridgeError(err)) throw err;
    return { code: err.code };
  }
}

/** The full parse, as the wire read every text frame before the compact form was read apart. */
function viaParse(text: string, slin: boolean): Outcome {
  try {
    const ev = parseProviderEvent(text);
    if (ev.event !== 'media')
      return { kind: ev.event === 'mark' ? 'played' : ev.event === 'session_end' ? 'end' : ev.event };
    const audio = fromBase64(ev.payload);
    if (slin && (audio.length & 1) !== 0) return { code: 'odd_length' };
    return { audio: [...audio] };
  } catch (err) {
    if (!isBridgeError(err)) throw err;
    return { code: err.code };
  }
}

function wireFor(codec: 'slin' | 'pcmu'): DefaultWire {
  return DefaultWire.of(resolveFormat({ codec, sample_rate: 8000, encoding: 'base64' }, undefined));
}

const compact = (payload: string, tail = '') => `{"event":"media","payload":"${payload}"${tail}}`;

/** Pieces a provider, or an attacker, might put anywhere in a media event. */
const piece = fc.constantFrom(
  '\\/',
  '\\u0041',
  '\\"',
  '\\\\',
  '"',
  ' ',
  '\n',
  '\u00e9',
  '=',
  '==',
  '-',
  '_',
  '}',
  '{',
  ',',
  ':',
  '0',
  'A',
  ',"seq":1',
  ',"timestamp":"x"',
  ',"payload":"AAAA"',
  // Four bytes each: a payload keeps its whole quads, and the decoder has to judge the characters.
  '\\/\\/',
  '    ',
  '\u00e9\u00e9',
  '-_-_',
  'AA==',
  '=AAA',
  '%%%%',
  '\t\t\t\t',
);

const media = fc
  .record({
    bytes: fc.uint8Array({ maxLength: 400 }),
    seq: fc.option(
      fc.oneof(fc.nat(), fc.constantFrom('007', '-1', '1.5', '1e3', '"3"', '12345678901234567')),
      {
        nil: undefined,
      },
    ),
    timestamp: fc.option(fc.oneof(fc.nat(), fc.constantFrom('00', '"t"', 'null')), { nil: undefined }),
  })
  .map(({ bytes, seq, timestamp }) => {
    let tail = '';
    if (seq !== undefined) tail += `,"seq":${seq}`;
    if (timestamp !== undefined) tail += `,"timestamp":${timestamp}`;
    return compact(Buffer.from(bytes).toString('base64'), tail);
  });

/** A media event with pieces inserted at random places (or none). */
const mutated = fc
  .tuple(media, fc.array(fc.tuple(fc.nat(), piece), { maxLength: 3 }))
  .map(([text, inserts]) => {
    let t = text;
    for (const [at, p] of inserts) {
      const i = at % (t.length + 1);
      t = t.slice(0, i) + p + t.slice(i);
    }
    return t;
  });

describe('compact base64 media events', () => {
  it('decode as the full parse does, for any text frame (fast-check)', () => {
    const slin = wireFor('slin');
    const pcmu = wireFor('pcmu');
    let compactSeen = 0;
    fc.assert(
      fc.property(fc.oneof(media, mutated), (text) => {
        if (compactMediaPayload(Buffer.from(text, 'utf8')) >= 0) compactSeen++;
        expect(viaWire(slin, text)).toEqual(viaParse(text, true));
        expect(viaWire(pcmu, text)).toEqual(viaParse(text, false));
      }),
      { numRuns: 3000 },
    );
    // The property reached the compact path, not only the parser.
    expect(compactSeen).toBeGreaterThan(200);
  });

  it('reads the forms providers write, and leaves the rest to the parser', () => {
    const audio = Buffer.from([1, 2, 3, 4]).toString('base64');
    const at = (t: string) => compactMediaPayload(Buffer.from(t, 'utf8'));
    const end = COMPACT_MEDIA_HEAD.length + audio.length;
    expect(at(compact(audio))).toBe(end);
    expect(at(compact(audio, ',"seq":0,"timestamp":20'))).toBe(end);
    expect(at(compact(audio, ',"seq":12,"timestamp":240'))).toBe(end);
    expect(at(compact(''))).toBe(COMPACT_MEDIA_HEAD.length);
    for (const other of [
      compact(audio, ',"seq":01,"timestamp":20'),
      compact(audio, ',"timestamp":20,"seq":1'),
      compact(audio, ',"seq":1'),
      compact(audio, ',"seq":-1,"timestamp":20'),
      compact('AAA'),
      compact(audio).replace('{"event":"media",', '{"event": "media",'),
      `{"payload":"${audio}","event":"media"}`,
      `${compact(audio)} `,
      compact(audio).slice(0, -1),
    ])
      expect(at(other), other).toBe(-1);
  });

  it("an escaped slash in the payload is still the parser's to read: the audio is the same", () => {
    const bytes = Buffer.from([0xff, 0xff, 0xfe, 0xfb, 0xef, 0xbe]);
    const b64 = bytes.toString('base64');
    expect(b64).toContain('/');
    const escaped = compact(b64.replaceAll('/', '\\/'));
    expect(viaWire(wireFor('slin'), escaped)).toEqual({ audio: [...bytes] });
  });

  it('hands back one buffer, refilled chunk after chunk: no buffer per chunk (what keeps caller audio copies it)', () => {
    const wire = wireFor('slin');
    const a = Buffer.from([1, 0, 2, 0]);
    const b = Buffer.from([3, 0, 4, 0]);
    const first = wire.frame(Buffer.from(compact(a.toString('base64'))), false);
    if (first.kind !== 'audio') expect.fail(`not audio: ${first.kind}`);
    const firstAudio = first.audio;
    expect([...firstAudio]).toEqual([...a]);
    const second = wire.frame(Buffer.from(compact(b.toString('base64'))), false);
    if (second.kind !== 'audio') expect.fail(`not audio: ${second.kind}`);
    expect([...second.audio]).toEqual([...b]);
    expect(second.audio.buffer).toBe(firstAudio.buffer);
    expect([...firstAudio]).toEqual([...b]);
  });
});
