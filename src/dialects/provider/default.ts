/**
 * The `default` provider dialect, declared: the voice API provider's own media stream (CONTRACT §2) at
 * `/v1/media`, authenticated by a media token signed with the tenant's `media_secret` (no
 * `provider_auth`). Its wire: src/media/providers/default.ts; its emulator twin:
 * src/emulator/dialects/default.ts.
 */
import type { ProviderDialectDecl } from '../types.js';

export const defaultProvider = {
  name: 'default',
  platform: 'the voice API provider',
  endpoint: 'root',
} as const satisfies ProviderDialectDecl;
