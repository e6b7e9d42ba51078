import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEV_MEDIA_SECRET, flagsToEnv, loadConfig } from '../src/config.js';

describe('config', () => {
  it('has embedded defaults for development', () => {
    const c = loadConfig({});
    expect(c.port).toBe(8080);
    expect(c.mediaAuth).toBe('jwt');
    expect(c.botUrl).toBe('builtin:echo');
    expect(c.botSampleRate).toBe(16000);
    expect(c.mediaSecret).toBe(DEV_MEDIA_SECRET);
    expect(c.requestTimeoutMs).toBeGreaterThan(c.providerReadTimeoutMs);
    expect(c.providerReadTimeoutMs).toBeGreaterThanOrEqual(30_000);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reports every bad variable in one error, naming what each accepts', () => {
    let err: unknown;
    try {
      loadConfig({ PORT: 'eighty', BOT_SAMPLE_RATE: '11025', MEDIA_AUTH: 'maybe', STATE_STORE: 'mongo://x' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const lines = (err as ConfigError).problems;
    expect(lines).toHaveLength(4);
    expect(lines.join('\n')).toMatch(/PORT must be an integer from 0 to 65535, got "eighty"/);
    expect(lines.join('\n')).toMatch(
      /BOT_SAMPLE_RATE must be one of 8000, 16000, 22050, 24000, 44100, 48000/,
    );
    expect(lines.join('\n')).toMatch(/MEDIA_AUTH must be one of jwt, none, got "maybe"/);
    expect(lines.join('\n')).toMatch(/STATE_STORE must be "memory" or a redis/);
  });

  it('refuses development shortcuts in production', () => {
    const prod = { NODE_ENV: 'production', PROVIDER_BASE_URL: 'https://provider.example/v1' };
    expect(() => loadConfig({ ...prod, MEDIA_AUTH: 'none', AUTH_JWT_SECRET: 'x' })).toThrow(
      /MEDIA_AUTH must be "jwt" when NODE_ENV=production/,
    );
    expect(() => loadConfig({ ...prod, AUTH_JWT_SECRET: 'x' })).toThrow(/MEDIA_SECRET must be set/);
    expect(() => loadConfig({ ...prod, MEDIA_SECRET: 's' })).toThrow(/AUTH_JWT_SECRET or AUTH_JWKS_URL/);
    const ok = loadConfig({ ...prod, MEDIA_SECRET: 's', AUTH_JWT_SECRET: 'a' });
    expect(ok.mediaSecretIsDev).toBe(false);
  });

  it('production needs PROVIDER_BASE_URL, reported with the other problems', () => {
    let err: unknown;
    try {
      loadConfig({ NODE_ENV: 'production', MEDIA_SECRET: 's', PORT: 'x' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const lines = (err as ConfigError).problems;
    expect(lines).toHaveLength(3);
    expect(
      lines.filter((l) => l.startsWith('PROVIDER_BASE_URL must be set when NODE_ENV=production')),
    ).toHaveLength(1);
    // Set but not a URL: one line, saying so.
    expect(() =>
      loadConfig({
        NODE_ENV: 'production',
        MEDIA_SECRET: 's',
        AUTH_JWT_SECRET: 'a',
        PROVIDER_BASE_URL: 'ftp://p',
      }),
    ).toThrow(/^PROVIDER_BASE_URL must be a https: or http: URL, got "ftp:\/\/p\/"$/);
  });

  it('never shows credentials, tokens or queries of the URLs it refuses', () => {
    let err: unknown;
    try {
      loadConfig({
        PROVIDER_BASE_URL: 'ftp://admin:pw-1234@provider.example/v1?token=tok-5678',
        AUTH_JWKS_URL: 'ws://jwks-user:pw-2345@idp.example/jwks?token=tok-6789#tok-frag',
        STATE_STORE: 'mongodb://db:pw-3456@db.example:27017/calls?token=tok-7890',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const text = (err as ConfigError).message;
    expect(text).toContain(
      'PROVIDER_BASE_URL must be a https: or http: URL, got "ftp://provider.example/v1"',
    );
    expect(text).toContain('AUTH_JWKS_URL must be a https: or http: URL, got "ws://idp.example/jwks"');
    expect(text).toContain(
      'STATE_STORE must be "memory" or a redis://… URL, got "mongodb://db.example:27017/calls"',
    );
    expect(text).not.toMatch(/pw|tok|admin|user/);
  });

  it('takes --flag twins over the environment', () => {
    expect(flagsToEnv(['--port', '9001', '--bot-url=builtin:tone', '--dsp-workers', '0'])).toEqual({
      PORT: '9001',
      BOT_URL: 'builtin:tone',
      DSP_WORKERS: '0',
    });
    expect(loadConfig({ PORT: '1' }, ['--port', '9001']).port).toBe(9001);
  });

  it('validates BOT_URL as a URL and never echoes its credentials or query', () => {
    expect(loadConfig({ BOT_URL: 'wss://u:p@bot.example:8443/v1/bot?token=t' }).botUrl).toBe(
      'wss://u:p@bot.example:8443/v1/bot?token=t',
    );
    // The scheme in any case, as URLs allow.
    expect(loadConfig({ BOT_URL: 'WSS://bot.example/v1' }).botUrl).toBe('WSS://bot.example/v1');
    for (const [raw, shown] of [
      ['ws://bot-user:pw-s3cret@bad host/x?token=tok-s3cret', '(not a valid URL)'],
      ['wss://bot-user:pw-s3cret@bot.example/x?token=tok-s3cret#frag', 'wss://bot.example/x'],
      ['ws://', '(not a valid URL)'],
      ['http://bot-user:pw-s3cret@bot.example/x?token=tok-s3cret', 'http://bot.example/x'],
      // Not quite a ws URL, credentials and all: never quoted.
      ['wss:/bot-user:pw-s3cret@bot.example', 'wss://bot.example/'],
      [' wss://bot-user:pw-s3cret@bot.example', 'wss://bot.example/'],
      ['wss://bot-user:pw/s3cret@bot.example', '(not a valid URL)'],
      ['wss://bot-user:pw?s3cret@bot.example', '(not a valid URL)'],
      ['wss://bot-user:pw#s3cret@bot.example', '(not a valid URL)'],
      ['bot-user:pw-s3cret@bot.example', '(not a valid URL)'],
    ]) {
      let message = '';
      try {
        loadConfig({ BOT_URL: raw! });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/^BOT_URL must be /);
      expect(message).toContain(`got ${shown}`);
      expect(message).not.toMatch(/s3cret|bot-user/);
    }
  });

  it('shows no part of a malformed URL whose userinfo holds "/", "?" or "#"', () => {
    for (const raw of [
      'https://jwks-user:pw/s3cret@idp.example/jwks',
      'https://jwks-user:pw?s3cret@idp.example/jwks',
      'https://jwks-user:pw#s3cret@idp.example/jwks',
    ]) {
      expect(() => loadConfig({ AUTH_JWKS_URL: raw })).toThrow(
        /^AUTH_JWKS_URL must be a https: or http: URL, got "\(not a valid URL\)"$/,
      );
    }
  });

  it('BOT_URL_ALLOWED_HOSTS: * outside production, nothing in production; hosts, wildcards and ports', () => {
    expect(loadConfig({}).botUrlAllowedHosts).toEqual({ any: true, rules: [] });
    const prod = {
      NODE_ENV: 'production',
      MEDIA_SECRET: 's',
      AUTH_JWT_SECRET: 'a',
      PROVIDER_BASE_URL: 'https://provider.example/v1',
    };
    expect(loadConfig(prod).botUrlAllowedHosts).toEqual({ any: false, rules: [] });
    expect(loadConfig({ ...prod, BOT_URL_ALLOWED_HOSTS: ' ' }).botUrlAllowedHosts).toEqual({
      any: false,
      rules: [],
    });
    expect(
      loadConfig({
        ...prod,
        BOT_URL_ALLOWED_HOSTS: 'Bot.Example.com, *.voice.example:8443,10.0.0.5:9000,[::1],*',
      }).botUrlAllowedHosts,
    ).toEqual({
      any: true,
      rules: [
        { host: 'bot.example.com', wildcard: false, port: undefined },
        { host: 'voice.example', wildcard: true, port: 8443 },
        { host: '10.0.0.5', wildcard: false, port: 9000 },
        { host: '[::1]', wildcard: false, port: undefined },
      ],
    });
    const accepts =
      'BOT_URL_ALLOWED_HOSTS must be a comma-separated list of host names or IP addresses (bot.example.com, 10.0.0.5, [::1]), *.example.com wildcards (subdomains only), each with an optional :port, or * for any host, got';
    for (const [raw, shown] of [
      ['bot.example.com,bot.example.com/path', '"bot.example.com/path"'],
      ['bot.example.com:0', '"bot.example.com:0"'],
      ['bot.example.com:70000', '"bot.example.com:70000"'],
      ['*example.com', '"*example.com"'],
      ['*.10.0.0', '"*.10.0.0"'],
      ['wss://bot.example.com', '(not a host name)'],
      ['user:pw-s3cret@bot.example.com', '(not a host name)'],
    ]) {
      let lines: readonly string[] = [];
      try {
        loadConfig({ BOT_URL_ALLOWED_HOSTS: raw! });
      } catch (err) {
        lines = (err as ConfigError).problems;
      }
      expect(lines).toEqual([`${accepts} ${shown}`]);
    }
  });

  it('TRUST_PROXY: unset trusts no forwarded header; addresses, ranges or names; no hop count, never everyone', () => {
    expect(loadConfig({}).trustProxy).toBeUndefined();
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBeUndefined();
    expect(loadConfig({ TRUST_PROXY: ' 10.0.0.0/8, loopback,2001:db8::1 ' }).trustProxy).toEqual([
      '10.0.0.0/8',
      'loopback',
      '2001:db8::1',
    ]);
    for (const bad of ['true', '*', '0', '2', '999.1.1.1', '10.0.0.0/99', 'proxy.example.com', 'a,,b']) {
      let message = '';
      try {
        loadConfig({ TRUST_PROXY: bad });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, bad).toMatch(
        /TRUST_PROXY must be a comma-separated list of proxy addresses or CIDR ranges/,
      );
    }
  });

  it('BOT_WAV_DIR: unset by default; an existing directory, made absolute; anything else refused', () => {
    expect(loadConfig({}).botWavDir).toBeUndefined();
    const dir = mkdtempSync(join(tmpdir(), 'vb-wav-dir-'));
    expect(loadConfig({ BOT_WAV_DIR: dir }).botWavDir).toBe(dir);
    expect(loadConfig({ BOT_WAV_DIR: relative(process.cwd(), dir) }).botWavDir).toBe(dir);
    const file = join(dir, 'a.wav');
    writeFileSync(file, '');
    for (const raw of [join(dir, 'missing'), file]) {
      expect(() => loadConfig({ BOT_WAV_DIR: raw })).toThrow(
        `BOT_WAV_DIR must be an existing directory, got ${JSON.stringify(raw)}`,
      );
    }
  });

  it('messaging: off by default; 80 sends per second and 48 h retention unless told otherwise', () => {
    const c = loadConfig({});
    expect(c.messagingBaseUrl).toBeUndefined();
    expect(c.messagingToken).toBeUndefined();
    expect(c.messagingAccountId).toBeUndefined();
    expect(c.messagingWebhookSecret).toBeUndefined();
    expect(c.messagingSendsPerSec).toBe(80);
    expect(c.messageRetentionMs).toBe(48 * 3_600_000);
    expect(c.messagingRcsCountryCode).toBe('91');
    const set = loadConfig({
      MESSAGING_BASE_URL: 'https://messaging.example/v1',
      MESSAGING_TOKEN: 'tok',
      MESSAGING_ACCOUNT_ID: 'acct-1',
      MESSAGING_WEBHOOK_SECRET: 'a-webhook-secret-of-some-length',
      MESSAGING_SENDS_PER_SEC: '20',
      MESSAGE_RETENTION_MS: '3600000',
      MESSAGING_RCS_COUNTRY_CODE: '1',
    });
    expect(set).toMatchObject({
      messagingBaseUrl: 'https://messaging.example/v1',
      messagingToken: 'tok',
      messagingAccountId: 'acct-1',
      messagingWebhookSecret: 'a-webhook-secret-of-some-length',
      messagingSendsPerSec: 20,
      messageRetentionMs: 3_600_000,
      messagingRcsCountryCode: '1',
    });
  });

  it('messaging: one line per bad variable, naming what it accepts; the webhook secret never echoed', () => {
    let lines: readonly string[] = [];
    try {
      loadConfig({
        MESSAGING_BASE_URL: 'ftp://messaging.example/v1',
        MESSAGING_SENDS_PER_SEC: '0',
        MESSAGE_RETENTION_MS: 'two days',
        MESSAGING_WEBHOOK_SECRET: 'short-s3cret',
        MESSAGING_ACCOUNT_ID: 'has spaces',
        MESSAGING_RCS_COUNTRY_CODE: '+91',
      });
    } catch (err) {
      lines = (err as ConfigError).problems;
    }
    expect(lines).toEqual([
      'MESSAGING_BASE_URL must be a https: or http: URL, got "ftp://messaging.example/v1"',
      "MESSAGING_TOKEN must be set when MESSAGING_BASE_URL is set (the provider's messaging API key or token)",
      'MESSAGING_ACCOUNT_ID must be 1 to 128 letters, digits or "_.:-", got "has spaces"',
      'MESSAGING_WEBHOOK_SECRET must be at least 16 characters without spaces, got 12 characters',
      'MESSAGING_RCS_COUNTRY_CODE must be a country calling code, digits without "+" (e.g. 91 for India, 1 for the US and Canada), got "+91"',
      'MESSAGING_SENDS_PER_SEC must be an integer from 1 to 80, got "0"',
      'MESSAGE_RETENTION_MS must be an integer from 60000 to 2592000000, got "two days"',
    ]);
    expect(lines.join('\n')).not.toContain('short-s3cret');
    // Digits of no country: 999 and 0 are calling codes nowhere.
    for (const raw of ['999', '0', '91 ', 'IN']) {
      expect(() => loadConfig({ MESSAGING_RCS_COUNTRY_CODE: raw }), raw).toThrow(
        `MESSAGING_RCS_COUNTRY_CODE must be a country calling code, digits without "+" (e.g. 91 for India, 1 for the US and Canada), got ${JSON.stringify(raw)}`,
      );
    }
    expect(loadConfig({ MESSAGING_RCS_COUNTRY_CODE: '44' }).messagingRcsCountryCode).toBe('44');
  });

  it('messaging in production: the webhook secret is required once MESSAGING_BASE_URL is set', () => {
    const prod = {
      NODE_ENV: 'production',
      PROVIDER_BASE_URL: 'https://provider.example/v1',
      MEDIA_SECRET: 's',
      AUTH_JWT_SECRET: 'a',
    };
    expect(loadConfig(prod).messagingBaseUrl).toBeUndefined();
    const withMessaging = { ...prod, MESSAGING_BASE_URL: 'https://m.example/v1', MESSAGING_TOKEN: 't' };
    expect(() => loadConfig(withMessaging)).toThrow(
      /^MESSAGING_WEBHOOK_SECRET must be set when NODE_ENV=production and MESSAGING_BASE_URL is set/,
    );
    const ok = loadConfig({ ...withMessaging, MESSAGING_WEBHOOK_SECRET: 'x'.repeat(32) });
    expect(ok.messagingWebhookSecret).toBe('x'.repeat(32));
  });
});
