/**
 * The `exotel` provider dialect, declared: Exotel Voicebot streams at `/v1/media/exotel[/<tenant>]`,
 * authenticated by HTTP Basic (the applet's `wss://KEY:TOKEN@…`). Its wire:
 * src/media/providers/exotel.ts; its emulator twin: src/emulator/dialects/exotel.ts.
 */
import type { ProviderDialectDecl } from '../types.js';

export const exotelProvider = {
  name: 'exotel',
  platform: 'Exotel',
  endpoint: 'path',
  credential: {
    fields: {
      username: { kind: 'name', env: 'EXOTEL_STREAM_USER' },
      password: { kind: 'secret', env: 'EXOTEL_STREAM_PASSWORD' },
    },
  },
  env: [
    {
      name: 'EXOTEL_STREAM_USER',
      type: 'text',
      accepts: 'any text without a colon',
      defaultRule:
        'unset: Exotel streams of tenant default are refused (401), unless it stores provider_auth.exotel',
      description:
        "The HTTP Basic user name of tenant `default`'s Exotel streams (`wss://USER:PASSWORD@host/v1/media/exotel`).",
    },
    {
      name: 'EXOTEL_STREAM_PASSWORD',
      type: 'secret',
      accepts: 'any text',
      defaultRule:
        'unset: Exotel streams of tenant default are refused (401), unless it stores provider_auth.exotel',
      description: "The HTTP Basic password of tenant `default`'s Exotel streams, with `EXOTEL_STREAM_USER`.",
    },
  ],
} as const satisfies ProviderDialectDecl;
