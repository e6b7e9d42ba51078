import { describe, expect, it } from 'vitest';
import { useEmulatorCli } from '../helpers/emulator-cli.js';

const start = useEmulatorCli();

/** Starts `npm run emulator`'s entry point and resolves with what it printed once it has started. */
const startEmulator = (args: string[]) =>
  start(args, (out) => (out.includes('messaging control API') ? out : undefined));

const KEY = `vbk_${'0123456789abcdef'.repeat(2)}`;

describe('npm run emulator: the messaging flags', () => {
  it('prints the chat/RCS base URL, the given API key, the account token and the webhook URL (masked)', async () => {
    const out = await startEmulator([
      '--port',
      '0',
      '--log-level',
      'silent',
      '--messaging-api-key',
      KEY,
      '--webhook-url',
      'http://127.0.0.1:9/hook?token=url-secret',
      '--webhook-token',
      'bearer-secret',
      '--review-delay-ms=-1',
      '--read-delay-ms=-1',
    ]);
    const url = /listening on (http:\/\/\S+)/.exec(out)![1]!;
    expect(out).toContain(`chat and RCS APIs: ${url}/v1`);
    expect(out).toContain(`messaging API key: ${KEY}`);
    expect(out).toMatch(/account token: [0-9a-f-]{36}/);
    expect(out).toContain('webhook URL: http://127.0.0.1:9/hook?token=****');
    expect(out).toContain('(with a bearer token)');
    expect(out).not.toContain('url-secret');
    expect(out).not.toContain('bearer-secret');
    const token = /account token: (\S+)/.exec(out)![1]!;
    for (const t of [KEY, token]) {
      const r = await fetch(`${url}/v1/chat_templates`, { headers: { authorization: `Bearer ${t}` } });
      expect(r.status).toBe(200);
    }
    const hook = await fetch(`${url}/emulator/messaging/webhook`);
    expect(await hook.json()).toEqual({ url: 'http://127.0.0.1:9/hook?token=****', token_set: true });
  });

  it('refuses a malformed API key and a bad review outcome with exit code 2', async () => {
    await expect(startEmulator(['--port', '0', '--messaging-api-key', 'vbk_short'])).rejects.toThrow(
      /exited with 2[\s\S]*apiKey must be "vbk_"/,
    );
    await expect(startEmulator(['--port', '0', '--review-outcome', 'maybe'])).rejects.toThrow(
      /exited with 2[\s\S]*--review-outcome must be approve or reject/,
    );
    await expect(startEmulator(['--port', '0', '--webhook-token', 'has space'])).rejects.toThrow(
      /exited with 2[\s\S]*webhook token must be 1 to 4096 visible ASCII characters/,
    );
  });
});
