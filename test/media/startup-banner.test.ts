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

  it('says when no media token is needed', () => {
    const text = startupBanner('http://127.0.0.1:9000', loadConfig({ MEDIA_AUTH: 'none' }));
    expect(text).toContain('ws://127.0.0.1:9000/v1/media');
    expect(text).toMatch(/no token needed/);
    expect(text).not.toContain('--media');
  });
});
