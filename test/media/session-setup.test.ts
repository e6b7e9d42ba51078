/**
 * A connection between its upgrade and its live session: a set-up that fails part way leaves nothing
 * behind.
 */
import { describe, expect, it } from 'vitest';
import { type Config, ConfigError, loadConfig } from '../../src/config.js';
import { startBridge, useBridge } from '../helpers/bridge.js';
import { captureLog } from '../helpers/log-capture.js';
import { TestProvider } from '../helpers/provider.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const t = useBridge();

async function connect(): Promise<TestProvider> {
  const p = new TestProvider(t.bridge!.mediaUrl, { token: await t.bridge!.mediaToken() });
  t.providers.push(p);
  await p.opened;
  return p;
}

async function listed(): Promise<string[]> {
  const res = await fetch(`${t.bridge!.http}/v1/sessions`, {
    headers: { authorization: `Bearer ${await t.bridge!.restToken(['sessions:read'])}` },
  });
  return ((await res.json()) as { session_id: string }[]).map((s) => s.session_id);
}

describe('session set-up', () => {
  it('a session whose bot leg cannot be built is closed 1011 and unregistered; its id can start again', async () => {
    const logs = captureLog('debug');
    t.bridge = await startBridge({ LOG_LEVEL: 'debug' }, { log: logs.log });
    const ctx = t.bridge.bridge.ctx as { config: Config };
    const good = ctx.config;
    // A URL that ws refuses to dial (a space in the host), with credentials and a token in it.
    const bad = 'ws://bot-user:pw-s3cret@bad host/x?token=tok-s3cret';
    ctx.config = { ...good, botUrl: bad, bot: { dialect: 'bridge', url: bad } };
    const p = await connect();
    await p.start('setup-fail-1');
    expect(await p.waitClosed()).toBe(1011);
    const [err] = p.errors();
    expect(err?.code).toBe('bot_unavailable');
    // Unparseable with an `@` in it: where userinfo ends cannot be told, so none of the value is quoted.
    expect(err?.message).toContain('(not a valid URL)');
    expect(err?.message).toContain('BOT_URL');
    expect(err?.message).not.toMatch(/s3cret|bot-user/);
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 0, 2_000, 'session unregistered');
    expect(await listed()).toEqual([]);
    expect(logs.find(/session set-up failed/)).toHaveLength(1);
    expect(logs.lines.filter((l) => /s3cret|bot-user/.test(JSON.stringify(l)))).toEqual([]);

    // The same session_id starts again once the bot can be reached.
    ctx.config = good;
    const again = await connect();
    await again.start('setup-fail-1');
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 1, 2_000, 'session live again');
    expect(await listed()).toEqual(['setup-fail-1']);
    expect(again.errors()).toEqual([]);
    expect(again.closeCode).toBeUndefined();
  });

  it('closes 4400 a socket that sends no session_start within SESSION_START_TIMEOUT_MS', async () => {
    t.bridge = await startBridge({ SESSION_START_TIMEOUT_MS: '200' });
    const t0 = performance.now();
    const idle = await connect();
    const prompt = await connect();
    await prompt.start('in-time-1');
    expect(await idle.waitClosed(2_000)).toBe(4400);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(190);
    expect(idle.closeReason).toMatch(/no session_start within 200 ms/);
    expect(idle.errors().map((e) => e.code)).toEqual(['bad_session_start']);
    // The timer stopped at session_start: that call outlives the deadline.
    await quietFor(400, 'the prompt call to be closed');
    expect(prompt.closeCode).toBeUndefined();
    expect(await listed()).toEqual(['in-time-1']);
  });

  it('validates SESSION_START_TIMEOUT_MS, with a --flag twin', () => {
    expect(loadConfig({}, ['--session-start-timeout-ms', '250']).sessionStartTimeoutMs).toBe(250);
    expect(loadConfig({}).sessionStartTimeoutMs).toBe(10_000);
    expect(() => loadConfig({ SESSION_START_TIMEOUT_MS: '5' })).toThrow(ConfigError);
    expect(() => loadConfig({ SESSION_START_TIMEOUT_MS: 'soon' })).toThrow(
      /SESSION_START_TIMEOUT_MS must be/,
    );
  });

  it('frames past the 256 held during set-up are counted and reported in one error event', async () => {
    t.bridge = await startBridge({ BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0' });
    const tenants = t.bridge.bridge.ctx.tenants;
    const get = tenants.getMediaStream.bind(tenants);
    // A store that answers when the test says: the session is still being set up while the frames arrive.
    let answer: () => void = () => {};
    const asked = new Promise<void>((r) => {
      answer = r;
    });
    tenants.getMediaStream = async (t) => {
      await asked;
      return get(t);
    };
    const p = await connect();
    await p.start('held-1');
    for (let i = 0; i < 300; i++) p.sendRaw(Buffer.alloc(320));
    // The bridge answers a ping after the frames before it: once the pong is back, all 300 arrived.
    const pong = new Promise((r) => p.ws.once('pong', r));
    p.ws.ping();
    await pong;
    answer();
    const err = await p.waitEvent('error', 3_000);
    expect(err.code).toBe('frames_dropped');
    expect(err.message).toMatch(/^44 frames sent while the session was being set up were dropped/);
    const m = await t.bridge.bridge.ctx.metrics.badFrames.get();
    expect(m.values.find((v) => v.labels.code === 'frames_dropped')?.value).toBe(44);
    // The 256 held frames reached the call, and it goes on.
    const framesIn = await t.bridge.bridge.ctx.metrics.framesIn.get();
    expect(framesIn.values.find((v) => v.labels.leg === 'caller')?.value).toBe(256);
    await waitFor(() => p.audio.length >= 5, 2_000, 'held audio echoed');
    expect(p.errors()).toHaveLength(1);
    expect(p.closeCode).toBeUndefined();
  });
});
