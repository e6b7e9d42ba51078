/**
 * Upstream provider faults through the bridge's call-control routes, one programmable provider on
 * loopback, a live control call beside them: a 500 (retried once), 503, a hang past the bound (504),
 * malformed JSON (502), an answer body trickled slower than the bound (504) and within it (200), and
 * connection refused (503). Each answers the contract's error body naming the provider call, is counted
 * in voicebridge_upstream_seconds by outcome, and is logged with the session it was for; the control
 * call's audio keeps flowing. (The provider client's own cases, one at a time, are in
 * test/provider/client.test.ts.)
 */
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import {
  call,
  holdSession,
  MEDIA_SECRET,
  type Rig,
  restToken,
  startRig,
  tinyServer,
} from '../control/harness.js';
import { ControlCall } from '../helpers/control-call.js';

type Mode = 'ok' | '500' | '503' | 'hang' | 'malformed' | 'trickle-slow' | 'trickle-fast';
let mode: Mode = 'ok';
const open: ServerResponse[] = [];
const ANSWER = JSON.stringify({
  sessionId: 'up-1',
  consultId: 'c-1',
  status: 'answered',
  dialStatus: 'ANSWER',
});

/** Writes `body` a few bytes at a time, `everyMs` apart; bounded by the body's length. */
function trickle(res: ServerResponse, body: string, everyMs: number): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  let at = 0;
  const step = () => {
    if (res.destroyed || at >= body.length) return;
    res.write(body.slice(at, at + 8));
    at += 8;
    if (at < body.length) setTimeout(step, everyMs);
    else res.end();
  };
  step();
}

let provider: Awaited<ReturnType<typeof tinyServer>>;
let rig: Rig;
let control: ControlCall;
let token: string;

beforeAll(async () => {
  provider = await tinyServer((_req, res) => {
    open.push(res);
    if (mode === 'ok') res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER);
    else if (mode === '500')
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"boom"}');
    else if (mode === '503') res.writeHead(503).end();
    else if (mode === 'malformed')
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"sessionId":');
    // ~100 bytes at 8 bytes per 100 ms: ~1.2 s, past the 700 ms bound; or within it at 8 bytes per 10 ms.
    else if (mode === 'trickle-slow') trickle(res, ANSWER, 100);
    else if (mode === 'trickle-fast') trickle(res, ANSWER, 10);
    // 'hang': never answers.
  });
  rig = await startRig({ providerUrl: `${provider.url}/v1`, config: { providerReadTimeoutMs: 700 } });
  await holdSession(rig.bridge, 'up-1');
  token = await restToken(['calls:control']);
  const media = `${rig.http.replace('http', 'ws')}/v1/media`;
  control = await ControlCall.start(media, await mintToken({ secret: MEDIA_SECRET }), 'up-control');
});

afterAll(async () => {
  control?.close();
  for (const r of open) r.destroy();
  await rig?.close();
  await provider?.close();
});

async function outcomes(): Promise<Record<string, number>> {
  const m = await rig.bridge.ctx.metrics.upstreamSeconds.get();
  const out: Record<string, number> = {};
  for (const v of m.values)
    if (v.metricName === 'voicebridge_upstream_seconds_count') out[String(v.labels.outcome)] = v.value;
  return out;
}

describe('upstream provider faults, beside a live call', () => {
  it('each maps to the contract status and body, is counted by outcome and logged with its session', async () => {
    const from = performance.now();
    const cases: [Mode, number, string, RegExp, number][] = [
      ['500', 502, 'upstream_bad_answer', /provider consult failed twice with status 500/, 2],
      ['503', 503, 'upstream_unavailable', /provider consult/, 1],
      ['hang', 504, 'upstream_timeout', /provider consult did not answer within 700 ms/, 1],
      ['malformed', 502, 'upstream_bad_answer', /provider consult answered with malformed JSON/, 1],
      ['trickle-slow', 504, 'upstream_timeout', /provider consult did not answer within 700 ms/, 1],
    ];
    for (const [m, status, code, message, requests] of cases) {
      mode = m;
      const before = provider.requests();
      const t = performance.now();
      const r = await call(rig.http, 'POST', '/v1/sessions/up-1/consult', {
        token,
        body: { calledParty: '100' },
      });
      const ms = performance.now() - t;
      expect(r.status, m).toBe(status);
      expect(r.body, m).toEqual({ error: code, message: expect.stringMatching(message) });
      expect(provider.requests() - before, m).toBe(requests);
      // The bound holds whatever the provider does: 700 ms, plus the one retry's delay for a 500.
      expect(ms, m).toBeLessThan(2_000);
    }
    mode = 'trickle-fast';
    const ok = await call(rig.http, 'POST', '/v1/sessions/up-1/consult', {
      token,
      body: { calledParty: '100' },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe('answered');

    // Connection refused: the provider is gone.
    for (const r of open) r.destroy();
    await provider.close();
    const refused = await call(rig.http, 'POST', '/v1/sessions/up-1/consult', {
      token,
      body: { calledParty: '100' },
    });
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({
      error: 'upstream_unavailable',
      message: expect.stringMatching(/provider consult/),
    });

    const counted = await outcomes();
    console.log(`upstream outcomes: ${JSON.stringify(counted)}`);
    expect(counted).toMatchObject({
      upstream_bad_answer: 2,
      upstream_unavailable: 2,
      upstream_timeout: 2,
      ok: 1,
    });
    const failures = rig.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'call control failed');
    expect(failures).toHaveLength(6);
    for (const f of failures) expect(f).toMatchObject({ session_id: 'up-1', call: 'consult', level: 40 });

    const w = control.window(from);
    // The rig's echo bot answers 200 ms late (ECHO_DELAY_MS): what is due is what was sent before that.
    const due = (performance.now() - from - 200) / 20;
    console.log(
      `control call: ${w.chunks} of ~${Math.round(due)} chunks, max gap ${w.maxGapMs.toFixed(1)} ms`,
    );
    expect(w.chunks).toBeGreaterThanOrEqual(Math.floor(due * 0.85));
    expect(w.maxGapMs).toBeLessThan(100);
  }, 30_000);
});
