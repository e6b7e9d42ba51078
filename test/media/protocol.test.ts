/**
 * Pure protocol rules: frame validation and how a session's format is resolved.
 */
import { describe, expect, it } from 'vitest';
import { BridgeError } from '../../src/errors.js';
import { resolveFormat } from '../../src/media/format.js';
import { parseBotEvent, parseProviderEvent, parseSessionStart } from '../../src/media/protocol.js';
import type { MediaStreamConfig } from '../../src/state/types.js';

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof BridgeError ? err.code : 'not a BridgeError';
  }
  return undefined;
}

const stored: MediaStreamConfig = {
  tenant: 't',
  media_ws_url: 'wss://x/v1/media',
  codec: 'pcmu',
  input_sample_rate: 16000,
  output_sample_rate: 8000,
  channels: 1,
  encoding: 'base64',
  chunk_bytes: 400,
};

describe('format resolution', () => {
  it('defaults to slin, 8000 Hz, binary, 20 ms chunks', () => {
    expect(resolveFormat(undefined, undefined)).toMatchObject({
      codec: 'slin',
      inputRate: 8000,
      outputRate: 8000,
      encoding: 'binary',
      chunkBytes: 320,
      chunkMs: 20,
      silenceByte: 0,
    });
  });

  it("takes what the media object leaves out from the tenant's stored config", () => {
    expect(resolveFormat(undefined, stored)).toMatchObject({
      codec: 'pcmu',
      inputRate: 16000,
      outputRate: 8000,
      encoding: 'base64',
      chunkBytes: 400,
      chunkMs: 50,
      silenceByte: 0xff,
    });
    expect(resolveFormat({ codec: 'slin', encoding: 'binary' }, stored)).toMatchObject({
      codec: 'slin',
      inputRate: 16000,
      encoding: 'binary',
      chunkBytes: 400,
    });
  });

  it('output_sample_rate defaults to the media sample_rate; 20 ms chunks follow the output rate', () => {
    expect(resolveFormat({ sample_rate: 16000 }, undefined)).toMatchObject({
      inputRate: 16000,
      outputRate: 16000,
      chunkBytes: 640,
    });
    expect(
      resolveFormat({ codec: 'pcma', sample_rate: 16000, output_sample_rate: 8000 }, undefined),
    ).toMatchObject({ outputRate: 8000, chunkBytes: 160, silenceByte: 0xd5 });
  });
});

describe('provider frames', () => {
  it('accepts codec aliases case-insensitively in session_start', () => {
    for (const alias of ['PCM16', 'l16', 'LINEAR16', 'slin16', 'SLIN']) {
      const ev = parseSessionStart(
        JSON.stringify({ event: 'session_start', session_id: 's', media: { codec: alias } }),
      );
      expect(ev.media?.codec).toBe('slin');
    }
  });

  it('names the field and what it accepts', () => {
    const bad = (o: unknown) => () => parseSessionStart(JSON.stringify(o));
    expect(bad({ event: 'session_start', session_id: 's', direction: 'sideways' })).toThrow(
      /direction must be "inbound" or "outbound", got "sideways"/,
    );
    expect(bad({ event: 'session_start', session_id: 's', started_at: 'yesterday' })).toThrow(
      /started_at must be an ISO 8601/,
    );
    expect(bad({ event: 'session_start', session_id: 's', media: { chunk_bytes: 321 } })).toThrow(
      /media.chunk_bytes must be an even integer from 80 to 6400, got 321/,
    );
    expect(bad({ event: 'session_start', session_id: 's', media: { encoding: 'hex' } })).toThrow(
      /media.encoding must be "binary" or "base64"/,
    );
    expect(bad({ event: 'session_start', session_id: 42 })).toThrow(/session_id must be a non-empty string/);
    expect(code(bad({ event: 'media' }))).toBe('bad_session_start');
  });

  it('classifies bad frames after session_start by code', () => {
    expect(code(() => parseProviderEvent('{'))).toBe('bad_json');
    expect(code(() => parseProviderEvent('"media"'))).toBe('bad_json');
    expect(code(() => parseProviderEvent('{"event":"play"}'))).toBe('unknown_event');
    expect(code(() => parseProviderEvent('{"payload":"AAAA"}'))).toBe('unknown_event');
    expect(code(() => parseProviderEvent('{"event":"dtmf","digit":"12"}'))).toBe('invalid_field');
    expect(parseProviderEvent('{"event":"dtmf","digit":"a"}')).toEqual({ event: 'dtmf', digit: 'A' });
    expect(parseProviderEvent('{"event":"session_end"}')).toEqual({
      event: 'session_end',
      reason: undefined,
    });
  });
});

describe('bot frames', () => {
  it('accepts mark, clear, dtmf and session_end; names what else is accepted', () => {
    expect(parseBotEvent('{"event":"clear"}')).toEqual({ event: 'clear' });
    expect(parseBotEvent('{"event":"mark","name":"m"}')).toEqual({ event: 'mark', name: 'm' });
    expect(() => parseBotEvent('{"event":"media","payload":""}')).toThrow(/audio as binary frames/);
  });
});
