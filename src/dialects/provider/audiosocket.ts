/**
 * The `audiosocket` provider dialect, declared: Asterisk AudioSocket over TCP, on a listener of its
 * own (AUDIOSOCKET_PORT, src/media/audiosocket-listener.ts, its settings in src/config/audiosocket.ts).
 * It carries no credentials: the listener takes connections only from AUDIOSOCKET_ALLOW. Its wire:
 * src/media/providers/audiosocket.ts; its emulator twin: src/emulator/dialects/audiosocket.ts.
 */
import type { ProviderDialectDecl } from '../types.js';

export const audiosocketProvider = {
  name: 'audiosocket',
  platform: 'AudioSocket',
  endpoint: 'tcp',
} as const satisfies ProviderDialectDecl;
