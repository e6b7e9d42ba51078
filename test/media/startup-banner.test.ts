import { describe, expect, it } from 'vitest';
import { startupBanner } from '../../src/cli/banner.js';
import { loadConfig } from '../../src/config.js';

describe('npm start banner', () => {
  it('prints the media URL a provider connects to and how to mint a development media token', () => {
    const text = startupBanner('http://0.0.0.0:8080', loadConfig({}));
    expect(text).toContain('ws://127.0.0.1:8080/v1/media');
    expect(text).toContain('npm run token -- --media');
    expect(text).toContain('builtin:echo');
  });

  it('names the AudioSocket listener and whom it takes connections from, only when it listens', () => {
    expect(startupBanner('http://0.0.0.0:8080', loadConfig({}))).not.toContain('AudioSocket');
    const none = startupBanner('http://0.0.0.0:8080', loadConfig({ AUDIOSOCKET_PORT: '9092' }), {
      audioSocketUrl: 'tcp://0.0.0.0:9092',
    });
    expect(none).toContain('AudioSocket listener (Asterisk, tenant default): tcp://0.0.0.0:9092');
    expect(none).toContain('AUDIOSOCKET_ALLOW is empty: every connection is refused');
    const listed = startupBanner(
      'http://0.0.0.0:8080',
      loadConfig({ AUDIOSOCKET_PORT: '9092', AUDIOSOCKET_ALLOW: '10.0.4.21,10.0.5.0/24' }),
      { audioSocketUrl: 'tcp://0.0.0.0:9092' },
    );
    expect(listed).toContain('taking connections from 10.0.4.21, 10.0.5.0/24');
  });

  it('names a ws bot without its credentials, the scheme in any case', () => {
    for (const url of [
      'wss://bot-user:pw-b4nner@bot.example/v1?token=tok-b4nner',
      'WSS://bot-user:pw-b4nner@bot.example/v1',
    ]) {
      const text = startupBanner('http://127.0.0.1:9000', loadConfig({ BOT_URL: url }));
      expect(text).toContain('bot: wss://bot.example/v1 at 16000 Hz');
      expect(text).not.toMatch(/b4nner|bot-user/);
    }
  });

  it('says when no media token is needed', () => {
    const text = startupBanner('http://127.0.0.1:9000', loadConfig({ MEDIA_AUTH: 'none' }));
    expect(text).toContain('ws://127.0.0.1:9000/v1/media');
    expect(text).toMatch(/no token needed/);
    expect(text).not.toContain('--media');
  });
});

describe('npm start banner: the console link', () => {
  it('outside production, prints /console#token= with the token it is given, else the bare address', () => {
    const config = loadConfig({});
    expect(startupBanner('http://0.0.0.0:8080', config, { consoleToken: 'tok.en.sig' })).toContain(
      'console: http://127.0.0.1:8080/console#token=tok.en.sig',
    );
    expect(startupBanner('http://0.0.0.0:8080', config)).toContain(
      'console: http://127.0.0.1:8080/console (sign in with a REST token)',
    );
  });

  it('in production, prints no console link at all', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      MEDIA_SECRET: 'prod-media-secret',
      AUTH_JWT_SECRET: 'prod-auth-secret',
      PROVIDER_BASE_URL: 'http://provider.example/v1',
      PROVIDER_TOKEN: 'prod-provider-token',
    });
    const text = startupBanner('http://0.0.0.0:8080', config, { consoleToken: 'tok.en.sig' });
    expect(text).not.toContain('/console');
    expect(text).not.toContain('tok.en.sig');
  });
});
