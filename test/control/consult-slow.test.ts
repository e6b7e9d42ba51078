import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, holdSession, type Rig, restToken, startRig } from './harness.js';

// The one slow test: a consult the provider answers after 24 s (inside its 20 s + 5 s) must come back
// answered through the bridge's default bounds; nothing may cut it at 10 or 20 s.
describe('a slow consult', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig();
  });
  afterAll(async () => {
    await rig.close();
  });

  it('answered after 24 s comes back answered under the default bounds', async () => {
    expect(rig.bridge.ctx.config.providerReadTimeoutMs).toBeGreaterThanOrEqual(30_000);
    await holdSession(rig.bridge, 'slow-1');
    const token = await restToken(['calls:control']);
    const r = await call(rig.http, 'POST', '/v1/sessions/slow-1/consult', {
      token,
      body: { calledParty: '2400' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      sessionId: 'slow-1',
      consultId: 'consult-slow-1',
      status: 'answered',
      dialStatus: 'ANSWER',
    });
    expect(r.ms).toBeGreaterThanOrEqual(24_000);
    expect(r.ms).toBeLessThan(26_000);
  }, 40_000);
});
