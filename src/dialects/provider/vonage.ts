/**
 * The `vonage` provider dialect, declared: the Vonage Voice API `websocket` endpoint at
 * `/v1/media/vonage[/<tenant>]`, authenticated by a Bearer token the NCCO's headers carry and/or the
 * addresses Vonage connects from (Vonage signs nothing). Its wire: src/media/providers/vonage.ts; its
 * emulator twin: src/emulator/dialects/vonage.ts.
 */
import type { ProviderDialectDecl } from '../types.js';

export const vonageProvider = {
  name: 'vonage',
  platform: 'Vonage',
  endpoint: 'path',
  credential: {
    fields: { token: { kind: 'secret', env: 'VONAGE_STREAM_TOKEN' }, allow: { kind: 'allow' } },
    atLeastOne: true,
  },
  env: [
    {
      name: 'VONAGE_STREAM_TOKEN',
      type: 'secret',
      accepts: 'any text',
      defaultRule:
        'unset: Vonage streams of tenant default are refused (401), unless it stores provider_auth.vonage',
      description:
        "Tenant `default`'s Vonage stream token: `/v1/media/vonage` takes only upgrades with `Authorization: Bearer <token>` (the NCCO websocket endpoint's `authorization`).",
    },
  ],
} as const satisfies ProviderDialectDecl;
