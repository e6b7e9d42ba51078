/**
 * The load generator in every dialect: its calls go through the emulated providers (handshake,
 * framing, playout), and timing markers come back through an echo bridge with none lost and no
 * platform rule broken.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { generateTone } from '../../src/audio/tone.js';
import { DIALECTS, dialectRate } from '../../src/emulator/dialects/index.js';
import { asBackground } from '../../src/load/markers.js';
import { LoadRun } from '../../src/load/runner.js';
import { echo, type FakeBridge, startFake } from './dialect-fakes.js';

const fakes: FakeBridge[] = [];
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()));
});

describe('npm run load -- --dialect', () => {
  it.each(DIALECTS.filter((d) => d !== 'default'))(
    '%s: 4 calls, every marker back, no breach',
    async (dialect) => {
      const rate = dialectRate(dialect, 8000) as 8000 | 16000;
      const fake = await startFake(dialect, rate, echo(rate));
      fakes.push(fake);
      const result = await new LoadRun({
        url: fake.url,
        calls: 4,
        seconds: 3,
        rampSeconds: 0,
        rate,
        codec:
          dialect === 'twilio' || dialect === 'telnyx' || dialect === 'plivo' || dialect === 'asterisk'
            ? 'pcmu'
            : 'slin',
        encoding: 'binary',
        token: undefined,
        background: asBackground(generateTone(300, rate, rate, 0.5)),
        chunkMs: dialect === 'exotel' ? 100 : 20,
        markerEveryMs: 1000,
        markerBurstMs: 60,
        drainMs: 1_000,
        markerTimeoutMs: 3_000,
        idPrefix: `load-${dialect}`,
        dialect,
      }).run();
      expect(result).toMatchObject({
        callsConnected: 4,
        callsFailed: 0,
        callsDropped: 0,
        breaches: 0,
        errorEvents: 0,
      });
      expect(result.markersSent).toBeGreaterThanOrEqual(8);
      expect(result.markersReturned).toBe(result.markersSent);
      expect(result.markersLost).toBe(0);
    },
  );
});
