/**
 * Scale-out on a real Redis (loopback) with real bridge processes: any instance lists and controls
 * every instance's calls, a secret rotated on one is verified by all, a killed instance's calls leave
 * the lists within the TTL, and a Redis outage never stops audio.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { TestProvider } from '../helpers/provider.js';
import { redisSkipReason, type TestRedis, useRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';
import {
  type Cluster,
  type ListedSession,
  listIds,
  maxGapMs,
  openCalls,
  rest,
  startCluster,
} from './cluster-rig.js';

const skip = redisSkipReason('state/cluster.test.ts');

/** A chunk is 20 ms; anything near a pause (a wait on Redis) is far above this on a loaded 2-core box. */
const MAX_AUDIO_GAP_MS = 250;

describe.skipIf(skip !== undefined)('several instances sharing Redis', () => {
  let redis: TestRedis | undefined;
  let cluster: Cluster | undefined;
  const providers: TestProvider[] = [];

  afterEach(async () => {
    for (const p of providers.splice(0)) p.close();
    await cluster?.close();
    cluster = undefined;
    await redis?.stop();
    redis = undefined;
  });

  it('a call on A is listed by B within 1 s with the same fields; consult and conference through B reach it and A sees the conferenceNumbers', async () => {
    redis = await useRedis();
    cluster = await startCluster(redis, [{}, {}]);
    const [a, b] = cluster.bridges as [
      NonNullable<Cluster['bridges'][0]>,
      NonNullable<Cluster['bridges'][0]>,
    ];
    const rt = await cluster.restToken();

    const p = new TestProvider(a.mediaUrl, { token: await cluster.mediaToken() });
    providers.push(p);
    await p.opened;
    // B's first answer includes connection set-up and route warm-up; what is measured is propagation.
    expect((await listIds(b.http, rt))?.size).toBe(0);
    const t0 = performance.now();
    p.send({
      event: 'session_start',
      session_id: 'call-a1',
      customer_phone: '+15550111',
      direction: 'outbound',
      started_at: '2026-11-22T00:00:00.000Z',
    });
    await waitFor(
      async () => (await listIds(b.http, rt))?.has('call-a1') === true,
      1_000,
      'B to list call-a1',
      10,
    );
    const listedAfterMs = performance.now() - t0;
    console.info(`state: call on A listed by B after ${listedAfterMs.toFixed(0)} ms`);
    expect(listedAfterMs).toBeLessThan(1_000);

    const onA = await rest(a.http, 'GET', '/v1/sessions/call-a1', rt);
    const onB = await rest(b.http, 'GET', '/v1/sessions/call-a1', rt);
    expect(onA.status).toBe(200);
    expect(onB.body).toEqual(onA.body);
    expect(onB.body).toEqual({
      session_id: 'call-a1',
      customer_phone: '+15550111',
      direction: 'outbound',
      started_at: '2026-11-22T00:00:00.000Z',
      conferenceNumbers: [],
      dialect: 'default',
      denoise: false,
    });

    const consult = await rest(b.http, 'POST', '/v1/sessions/call-a1/consult', rt, {
      calledParty: '15550100',
    });
    expect(consult.status).toBe(200);
    expect(consult.body).toMatchObject({ sessionId: 'call-a1', status: 'answered' });

    const add = await rest(b.http, 'POST', '/v1/sessions/call-a1/conference', rt, {
      action: 'add',
      number: '15550123',
      callerId: '15550100',
    });
    expect(add.status).toBe(200);
    expect(add.body).toMatchObject({ status: 'answered' });
    const numbersOn = async (base: string) =>
      ((await rest(base, 'GET', '/v1/sessions/call-a1', rt)).body as ListedSession).conferenceNumbers;
    // The owner learns of the change (pub/sub) and answers with it from its own copy.
    await waitFor(async () => (await numbersOn(a.http)).includes('15550123'), 1_000, 'A to see the number');
    expect(await numbersOn(b.http)).toEqual(['15550123']);

    const del = await rest(b.http, 'POST', '/v1/sessions/call-a1/conference', rt, {
      action: 'delete',
      number: '15550123',
    });
    expect(del.status).toBe(200);
    await waitFor(async () => (await numbersOn(a.http)).length === 0, 1_000, 'A to drop the number');

    // A call that ends leaves B's list too.
    p.send({ event: 'session_end' });
    await waitFor(
      async () => (await listIds(b.http, rt))?.has('call-a1') === false,
      2_000,
      'B to drop call-a1',
    );
    expect((await rest(b.http, 'GET', '/v1/sessions/call-a1', rt)).status).toBe(404);
  });

  it('PUT /v1/media-stream on B: A accepts the new secret within 1 s and refuses the old one', async () => {
    redis = await useRedis();
    cluster = await startCluster(redis, [{}, {}]);
    const [a, b] = cluster.bridges as [
      NonNullable<Cluster['bridges'][0]>,
      NonNullable<Cluster['bridges'][0]>,
    ];
    const rt = await cluster.restToken();
    const oldToken = await cluster.mediaToken();
    const first = new TestProvider(a.mediaUrl, { token: oldToken });
    providers.push(first);
    await first.opened; // the old secret works before the change

    const rotated = 'rotated-media-secret-0042';
    const t0 = performance.now();
    const put = await rest(b.http, 'PUT', '/v1/media-stream', rt, {
      media_ws_url: a.mediaUrl,
      media_secret: rotated,
    });
    expect(put.status).toBe(200);
    expect(JSON.stringify(put.body)).not.toContain(rotated);
    const newToken = await cluster.mediaToken(rotated);
    const acceptedAfterMs = await waitFor(
      async () => {
        const p = new TestProvider(a.mediaUrl, { token: newToken });
        providers.push(p);
        return p.opened.then(
          () => true,
          () => false,
        );
      },
      1_000,
      'A to accept the new secret',
      10,
    );
    console.info(
      `state: new secret accepted by A ${(performance.now() - t0).toFixed(0)} ms after the PUT on B`,
    );
    expect(acceptedAfterMs).toBeLessThan(1_000);

    const stale = new TestProvider(a.mediaUrl, { token: oldToken });
    providers.push(stale);
    await expect(stale.opened).rejects.toThrow(/401/);
    // The stored config is shared too, without the secret.
    const got = await rest(a.http, 'GET', '/v1/media-stream', rt);
    expect(got.body).toMatchObject({ media_ws_url: a.mediaUrl, secret_hint: '****42' });
  });

  it("SIGKILL of A with 50 live calls: B stops listing them within 15 s (default TTL), and B's calls never pause", async () => {
    redis = await useRedis();
    cluster = await startCluster(redis, [{}, { BOT_URL: 'builtin:tone' }]);
    const [a, b] = cluster.bridges as [
      NonNullable<Cluster['bridges'][0]>,
      NonNullable<Cluster['bridges'][0]>,
    ];
    const rt = await cluster.restToken();
    const mt = await cluster.mediaToken();
    const aIds = Array.from({ length: 50 }, (_, i) => `a-${i}`);
    const bIds = ['b-0', 'b-1', 'b-2'];
    providers.push(...(await openCalls(a.mediaUrl, mt, aIds)));
    const onB = await openCalls(b.mediaUrl, mt, bIds);
    providers.push(...onB);
    await waitFor(async () => (await listIds(b.http, rt))?.size === 53, 5_000, 'B to list all 53 calls');
    // B's tone bot is playing on each of its calls.
    await waitFor(async () => onB.every((p) => p.audio.length > 10), 5_000, "B's calls to play audio");

    const killedAt = performance.now();
    await a.kill('SIGKILL');
    const goneAfterMs = await waitFor(
      async () => {
        const ids = await listIds(b.http, rt);
        return ids !== undefined && aIds.every((id) => !ids.has(id));
      },
      15_000,
      "A's calls to leave B's list",
      100,
    );
    const gaps = onB.map((p) => maxGapMs(p, killedAt));
    console.info(
      `state: A's 50 calls left B's list ${goneAfterMs.toFixed(0)} ms after SIGKILL; B's largest audio gap meanwhile ${Math.max(...gaps).toFixed(1)} ms`,
    );
    expect(goneAfterMs).toBeLessThan(15_000);
    expect(Math.max(...gaps)).toBeLessThan(MAX_AUDIO_GAP_MS);
    expect([...((await listIds(b.http, rt)) ?? [])].sort()).toEqual(bIds);
  });

  it('Redis stopped mid-run: calls keep flowing on every instance and new ones are accepted, the control plane answers 503 naming the store, and all recovers when it returns', async () => {
    redis = await useRedis({ own: true });
    cluster = await startCluster(redis, [{}, {}], { BOT_URL: 'builtin:tone', STATE_SESSION_TTL_MS: '3000' });
    const [a, b] = cluster.bridges as [
      NonNullable<Cluster['bridges'][0]>,
      NonNullable<Cluster['bridges'][0]>,
    ];
    const rt = await cluster.restToken();
    const mt = await cluster.mediaToken();
    const calls = [
      ...(await openCalls(a.mediaUrl, mt, ['a-0', 'a-1'])),
      ...(await openCalls(b.mediaUrl, mt, ['b-0', 'b-1'])),
    ];
    providers.push(...calls);
    await waitFor(async () => (await listIds(b.http, rt))?.size === 4, 5_000, 'B to list 4 calls');
    await waitFor(async () => calls.every((p) => p.audio.length > 10), 5_000, 'audio on every call');

    const stoppedAt = performance.now();
    await redis.stop();
    for (const base of [a.http, b.http]) {
      await waitFor(async () => (await rest(base, 'GET', '/v1/sessions', rt)).status === 503, 3_000, '503');
      const answer = await rest(base, 'GET', '/v1/sessions', rt);
      expect(answer.body).toMatchObject({ error: 'store_unavailable' });
      expect((answer.body as { message: string }).message).toContain(`Redis at 127.0.0.1:${redis.port}`);
      const put = await rest(base, 'PUT', '/v1/media-stream', rt, { media_ws_url: a.mediaUrl });
      expect(put.status).toBe(503);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toMatch(/^voicebridge_store_up 0$/m);
    }
    // A new call during the outage is accepted and plays.
    const [late] = await openCalls(a.mediaUrl, mt, ['a-late']);
    providers.push(late!);
    await waitFor(async () => late!.audio.length > 10, 3_000, 'audio on the call placed during the outage');
    // Its own calls stay readable on the instance that holds them.
    expect((await rest(a.http, 'GET', '/v1/sessions/a-late', rt)).status).toBe(200);
    // Hold the outage past a session TTL and several reconnection attempts before judging the audio.
    const outageMs = 4_000;
    await waitFor(async () => performance.now() - stoppedAt > outageMs, outageMs + 1_000, 'the outage', 100);
    const outageGaps = calls.map((p) => maxGapMs(p, stoppedAt));
    console.info(
      `state: largest audio gap during the Redis outage ${Math.max(...outageGaps).toFixed(1)} ms over ${((performance.now() - stoppedAt) / 1000).toFixed(1)} s`,
    );
    expect(Math.max(...outageGaps)).toBeLessThan(MAX_AUDIO_GAP_MS);

    const restartedAt = performance.now();
    await redis.restart();
    // Redis came back empty: each instance writes its own calls again on reconnect.
    const recoveredMs = await waitFor(
      async () => (await listIds(b.http, rt))?.size === 5,
      10_000,
      'B to list all 5 calls after Redis returns',
      50,
    );
    console.info(`state: lists whole again ${recoveredMs.toFixed(0)} ms after Redis restarted`);
    expect((await listIds(a.http, rt))?.size).toBe(5);
    const put = await rest(b.http, 'PUT', '/v1/media-stream', rt, { media_ws_url: a.mediaUrl });
    expect(put.status).toBe(200);
    expect(await (await fetch(`${a.http}/metrics`)).text()).toMatch(/^voicebridge_store_up 1$/m);
    expect(Math.max(...calls.map((p) => maxGapMs(p, restartedAt)))).toBeLessThan(MAX_AUDIO_GAP_MS);
  });
});
