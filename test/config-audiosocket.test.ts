import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';

describe('AUDIOSOCKET_* settings', () => {
  it('is off by default, with no address allowed and tenant default', () => {
    expect(loadConfig({}).audioSocket).toEqual({
      port: undefined,
      host: '0.0.0.0',
      tenant: 'default',
      allow: [],
    });
  });

  it('reads the port, host, tenant and allow list', () => {
    const c = loadConfig({
      AUDIOSOCKET_PORT: '9092',
      AUDIOSOCKET_HOST: '10.0.0.5',
      AUDIOSOCKET_TENANT: 'acme',
      AUDIOSOCKET_ALLOW: '10.0.4.21, 10.0.5.0/24,loopback',
    });
    expect(c.audioSocket).toEqual({
      port: 9092,
      host: '10.0.0.5',
      tenant: 'acme',
      allow: ['10.0.4.21', '10.0.5.0/24', 'loopback'],
    });
  });

  it('refuses bad values, naming the variable and what it accepts', () => {
    expect(() => loadConfig({ AUDIOSOCKET_PORT: '70000' })).toThrow(
      /AUDIOSOCKET_PORT must be a port, 0 to 65535/,
    );
    expect(() => loadConfig({ AUDIOSOCKET_PORT: 'x9' })).toThrow(/AUDIOSOCKET_PORT must be a port/);
    expect(() => loadConfig({ AUDIOSOCKET_ALLOW: '10.0.0.300' })).toThrow(
      /AUDIOSOCKET_ALLOW must be a comma-separated list of addresses or CIDR ranges/,
    );
    expect(() => loadConfig({ AUDIOSOCKET_ALLOW: '10.0.0.1,,' })).toThrow(/AUDIOSOCKET_ALLOW must be/);
    expect(() => loadConfig({ AUDIOSOCKET_TENANT: 'a b' })).toThrow(/AUDIOSOCKET_TENANT must be a tenant id/);
  });
});
