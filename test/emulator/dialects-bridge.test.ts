/**
 * The emulated providers against the real bridge, for the dialects the bridge serves: a call with
 * the built-in echo bot carries the caller's tone there and back at >= 30 dB SNR, breaks none of the
 * platform's rules, and a wrong credential is refused before the upgrade.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { generateTone, steadyToneSnrDb } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { startBridge, type TestBridge } from '../helpers/bridge.js';

const AUTH_TOKEN = 'twilio-auth-token-for-tests';
let bridge: TestBridge | undefined;
afterEach(async () => {
  await bridge?.close();
  bridge = undefined;
});

describe('emulated providers against the bridge', () => {
  it('twilio: the echo comes back at µ-law SNR, marks and rules kept; a wrong auth token gets 401', async () => {
    bridge = await startBridge({ TWILIO_AUTH_TOKEN: AUTH_TOKEN, BOT_URL: 'builtin:echo' });
    const url = `${bridge.mediaUrl}/twilio`;
    const options = {
      url,
      sessionId: `CA${randomUUID().replaceAll('-', '')}`,
      customerPhone: '15550100',
      direction: 'inbound' as const,
      dialect: 'twilio' as const,
      auth: { token: AUTH_TOKEN },
      audio: generateTone(440, 8000, 8000 * 2, 0.5),
      dtmf: [{ digit: '4', atMs: 500 }],
      keepReceived: true,
      tailMs: 800,
    };
    const report = await new SyntheticCall(options).run();
    expect(report.state).toBe('ended');
    expect(report.breaches).toEqual([]);
    expect(report.errors).toEqual([]);
    expect(report.secondsReceived).toBeGreaterThan(1.5);
    expect(steadyToneSnrDb(report.received, 440, 8000)).toBeGreaterThanOrEqual(30);

    const refused = await new SyntheticCall({ ...options, auth: { token: 'another-token' } }).run();
    expect(refused.state).toBe('failed');
    expect(refused.errors[0]).toMatchObject({ code: 'http_401' });
  });

  it('default: the echo comes back, played at real time', async () => {
    bridge = await startBridge({ BOT_URL: 'builtin:echo' });
    const report = await new SyntheticCall({
      url: bridge.mediaUrl,
      token: await bridge.mediaToken(),
      sessionId: `emu-${randomUUID()}`,
      customerPhone: '15550100',
      direction: 'inbound',
      format: { codec: 'slin', inputRate: 16000, outputRate: 16000, encoding: 'binary', chunkBytes: 640 },
      audio: generateTone(440, 16000, 16000 * 2, 0.5),
      keepReceived: true,
      tailMs: 800,
    }).run();
    expect(report.state).toBe('ended');
    expect(report.breaches).toEqual([]);
    expect(steadyToneSnrDb(report.received, 440, 16000)).toBeGreaterThanOrEqual(30);
    expect(report.interArrivalMs.count).toBeGreaterThan(50);
  });
});
