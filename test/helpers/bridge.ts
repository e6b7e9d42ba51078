/**
 * A real bridge on 127.0.0.1, port 0, for tests.
 */
import { afterEach } from 'vitest';
import { type Bridge, createBridge } from '../../src/app.js';
import { mintToken } from '../../src/auth/jwt.js';
import { DEV_AUTH_JWT_SECRET, DEV_MEDIA_SECRET, loadConfig } from '../../src/config.js';
import type { Logger } from '../../src/log.js';
import type { TestProvider } from './provider.js';

export interface TestBridge {
  readonly bridge: Bridge;
  readonly http: string;
  readonly mediaUrl: string;
  /** A media token for `tenant` (default: tenant "default") signed with the development media secret. */
  mediaToken(options?: { tenant?: string; ttlSeconds?: number; secret?: string }): Promise<string>;
  restToken(scopes: string[], tenant?: string): Promise<string>;
  close(): Promise<void>;
}

export async function startBridge(
  env: Record<string, string> = {},
  options: { log?: Logger } = {},
): Promise<TestBridge> {
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    // Inline unless the run asks for workers (CI runs the media tests once more with TEST_DSP_WORKERS=1).
    DSP_WORKERS: process.env.TEST_DSP_WORKERS ?? '0',
    ...env,
  });
  const bridge = await createBridge(config, options.log === undefined ? {} : { log: options.log });
  const http = await bridge.listen();
  let closed = false;
  return {
    bridge,
    http,
    mediaUrl: `${http.replace('http', 'ws')}/v1/media`,
    mediaToken: (o = {}) =>
      mintToken({
        secret: o.secret ?? DEV_MEDIA_SECRET,
        ttlSeconds: o.ttlSeconds ?? 600,
        ...(o.tenant !== undefined ? { tenant: o.tenant } : {}),
      }),
    restToken: (scopes, tenant) =>
      mintToken({ secret: DEV_AUTH_JWT_SECRET, scopes, ...(tenant !== undefined ? { tenant } : {}) }),
    async close() {
      if (closed) return;
      closed = true;
      await bridge.close();
    },
  };
}

/** A test file's bridge and providers, closed after each test. */
export interface BridgeSlot {
  bridge: TestBridge | undefined;
  readonly providers: TestProvider[];
}

/** Registers an afterEach that closes the providers, then the bridge, and empties the slot. */
export function useBridge(): BridgeSlot {
  const slot: BridgeSlot = { bridge: undefined, providers: [] };
  afterEach(async () => {
    for (const p of slot.providers.splice(0)) p.close();
    await slot.bridge?.close();
    slot.bridge = undefined;
  });
  return slot;
}
