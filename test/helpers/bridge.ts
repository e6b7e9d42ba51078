/**
 * A bridge with no peers, for tests that bring their own: `startRig` (rig.ts) with `env` and nothing
 * else, and `useBridge` to close it (and a test's provider sockets) after each test.
 */
import { afterEach } from 'vitest';
import type { BridgeOptions } from '../../src/app.js';
import type { Logger } from '../../src/log.js';
import type { TestProvider } from './provider.js';
import { type InProcessRig, startRig } from './rig.js';

export type TestBridge = InProcessRig;

export function startBridge(
  env: Record<string, string> = {},
  options: { log?: Logger; limitClock?: BridgeOptions['limitClock'] } = {},
): Promise<TestBridge> {
  return startRig({
    env,
    ...(options.log === undefined ? {} : { log: options.log }),
    ...(options.limitClock === undefined ? {} : { bridgeOptions: { limitClock: options.limitClock } }),
  });
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
