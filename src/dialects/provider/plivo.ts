/**
 * The `plivo` provider dialect, declared: Plivo's bidirectional audio streams at
 * `/v1/media/plivo[/<tenant>]`, authenticated by a token of the tenant's choosing (Plivo signs no
 * stream), as `?token=` or a Bearer. Its wire: src/media/providers/plivo.ts; its emulator twin:
 * src/emulator/dialects/plivo.ts.
 */
import type { ProviderDialectDecl } from '../types.js';

export const plivoProvider = {
  name: 'plivo',
  platform: 'Plivo',
  endpoint: 'path',
  credential: { fields: { token: { kind: 'secret', env: 'PLIVO_STREAM_TOKEN' } } },
  env: [
    {
      name: 'PLIVO_STREAM_TOKEN',
      type: 'secret',
      accepts: 'any text',
      defaultRule:
        'unset: Plivo streams of tenant default are refused (401), unless it stores provider_auth.plivo',
      description:
        "A token of tenant `default`'s choosing for its Plivo streams (Plivo signs no stream): `/v1/media/plivo` requires it as `?token=` in the stream URL or `Authorization: Bearer`.",
    },
  ],
} as const satisfies ProviderDialectDecl;
