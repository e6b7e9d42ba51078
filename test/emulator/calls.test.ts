import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jwtVerify } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { mintToken } from '../../src/auth/jwt.js';
import { createEmulator, type Emulator } from '../../src/emulator/server.js';
import { createLogger } from '../../src/log.js';
import { call, EMULATOR_SECRET, type Rig, restToken, startRig } from '../control/harness.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'calls-test-media-secret';

/** Polls `probe` (with waitFor) until it answers something; resolves to that. */
async function waitForValue<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  let v: T | undefined;
  await waitFor(
    async () => {
      v = await probe();
      return v !== undefined;
    },
    timeoutMs,
    what,
    20,
  );
  return v!;
}

/** A media endpoint that checks the token, sends a clear, echoes audio, and sends a mark. */
async function fakeEndpoint() {
  const seen = {
    tokenOk: false,
    start: undefined as Record<string, unknown> | undefined,
    frames: 0,
    marksBack: [] as string[],
    end: false,
  };
  const server: Server = createServer();
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', async (req, socket, head) => {
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    try {
      await jwtVerify(token, new TextEncoder().encode(SECRET), {
        algorithms: ['HS256'],
        requiredClaims: ['exp'],
      });
      seen.tokenOk = true;
    } catch {
      socket.end('HTTP/1.1 401 Unauthorized\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (data, isBinary) => {
        if (isBinary) {
          seen.frames++;
          ws.send(data, { binary: true });
          if (seen.frames === 5) ws.send(JSON.stringify({ event: 'mark', name: 'greeting-done' }));
          return;
        }
        const msg = JSON.parse(String(data));
        if (msg.event === 'session_start') {
          seen.start = msg;
          // A clear with nothing queued yet: counted, and the tone the caller hears stays whole.
          ws.send(JSON.stringify({ event: 'clear' }));
        }
        if (msg.event === 'mark') seen.marksBack.push(msg.name);
        if (msg.event === 'session_end') {
          seen.end = true;
          ws.close(1000);
        }
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}/media`,
    seen,
    close: () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        server.close(() => r());
      }),
  };
}

describe('synthetic calls placed by the emulator', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('dials the registered endpoint with a JWT of the registered secret, paces audio, honours mark and clear', async () => {
    const endpoint = await fakeEndpoint();
    cleanups.push(endpoint.close);
    const emu: Emulator = await createEmulator({ jwtSecret: EMULATOR_SECRET, log: createLogger('silent') });
    cleanups.push(() => emu.close());
    const url = await emu.listen(0);
    const token = await mintToken({ secret: EMULATOR_SECRET, scopes: ['media:manage'] });

    const early = await call(url, 'POST', '/emulator/calls', {
      token,
      body: { audio: 'tone:440', seconds: 1 },
    });
    expect(early.status).toBe(409); // nothing registered yet

    await call(url, 'PUT', '/v1/media-stream', {
      token,
      body: {
        media_ws_url: endpoint.url,
        media_secret: SECRET,
        codec: 'PCM16',
        input_sample_rate: 8000,
        chunk_bytes: 320,
      },
    });
    const badAudio = await call(url, 'POST', '/emulator/calls', {
      token,
      body: { audio: 'noise', seconds: 1 },
    });
    expect(badAudio.status).toBe(400);
    expect(badAudio.body.message).toMatch(
      /audio must be "tone:<hz>", "turns:<hz>\[\/<on ms>\/<off ms>\]", "wav:<path>", "speech:<text>" or "silence"/,
    );

    const placed = await call(url, 'POST', '/emulator/calls', {
      token,
      body: { customer_phone: '15550123', direction: 'outbound', audio: 'tone:440', seconds: 1 },
    });
    expect(placed.status).toBe(201);
    const id = placed.body.session_id as string;
    expect((await call(url, 'GET', `/v1/sessions/${id}`, { token })).body).toMatchObject({
      session_id: id,
      customer_phone: '15550123',
    });

    const report = await waitForValue(
      async () => {
        const r = await call(url, 'GET', `/emulator/calls/${id}`, { token });
        return r.body.state === 'ended' || r.body.state === 'failed' ? r.body : undefined;
      },
      6_000,
      'the call to end',
    );
    expect(endpoint.seen.tokenOk).toBe(true);
    expect(endpoint.seen.start).toMatchObject({
      event: 'session_start',
      session_id: id,
      customer_phone: '15550123',
      direction: 'outbound',
      media: {
        codec: 'PCM16',
        sample_rate: 8000,
        output_sample_rate: 8000,
        encoding: 'binary',
        chunk_bytes: 320,
      },
    });
    expect(endpoint.seen.frames).toBe(50); // 1 s in 20 ms chunks
    expect(endpoint.seen.marksBack).toEqual(['greeting-done']);
    expect(endpoint.seen.end).toBe(true);
    expect(report).toMatchObject({
      state: 'ended',
      seconds_sent: 1,
      chunks_sent: 50,
      marks: ['greeting-done'],
      clears: 1,
      errors: [],
      close_code: 1000,
    });
    expect(report.seconds_received).toBe(1);
    expect(report.tone_snr_db as number).toBeGreaterThan(40);
    // The call is over: the emulator no longer lists it.
    expect((await call(url, 'GET', `/v1/sessions/${id}`, { token })).status).toBe(404);
  });

  it('a call placed by the emulator shows up in the bridge within a second, and can be consulted', async () => {
    const rig: Rig = await startRig();
    cleanups.push(() => rig.close());
    const rest = await restToken(['media:manage', 'sessions:read', 'calls:control']);
    const mediaUrl = `${rig.http.replace('http', 'ws')}/v1/media`;
    const put = await call(rig.http, 'PUT', '/v1/media-stream', {
      token: rest,
      body: { media_ws_url: mediaUrl, media_secret: SECRET, encoding: 'base64', codec: 'slin16' },
    });
    expect(put.status).toBe(200);

    const emuToken = await mintToken({ secret: EMULATOR_SECRET });
    const placed = await call(rig.emulatorUrl!, 'POST', '/emulator/calls', {
      token: emuToken,
      body: { audio: 'tone:440', seconds: 3 },
    });
    expect(placed.status).toBe(201);
    const id = placed.body.session_id as string;
    const started = performance.now();
    await waitFor(
      async () => {
        const list = await fetch(`${rig.http}/v1/sessions`, { headers: { authorization: `Bearer ${rest}` } });
        const sessions = (await list.json()) as { session_id: string }[];
        return sessions.some((s) => s.session_id === id);
      },
      1_000,
      'the bridge to list the emulated call',
    );
    const listedAfterMs = performance.now() - started;
    expect(listedAfterMs).toBeLessThan(1_000);

    const consult = await call(rig.http, 'POST', `/v1/sessions/${id}/consult`, {
      token: rest,
      body: { calledParty: '100' },
    });
    expect(consult.body).toEqual({
      sessionId: id,
      consultId: `consult-${id}`,
      status: 'answered',
      dialStatus: 'ANSWER',
    });

    const report = await waitForValue(
      async () => {
        const r = await call(rig.emulatorUrl!, 'GET', `/emulator/calls/${id}`, { token: emuToken });
        return r.body.state === 'ended' || r.body.state === 'failed' ? r.body : undefined;
      },
      8_000,
      'the call to end',
    );
    // Through the bridge's echo bot: the tone comes back, resampled twice, almost all of it.
    expect(report.state).toBe('ended');
    expect(report.seconds_sent).toBe(3);
    expect(report.seconds_received as number).toBeGreaterThan(2.5);
    expect(report.tone_snr_db as number).toBeGreaterThan(60);
    expect(report.errors).toEqual([]);
  });
});
