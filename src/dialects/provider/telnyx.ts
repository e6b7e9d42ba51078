/**
 * The `telnyx` provider dialect, declared: Telnyx media streaming (RTP mode) at
 * `/v1/media/telnyx[/<tenant>]`, authenticated by the stream's `stream_auth_token` in
 * `x-telnyx-streaming-auth-token`. Its wire: src/media/providers/telnyx.ts; its emulator twin:
 * src/emulator/dialects/telnyx.ts.
 */
import type { ProviderDialectDecl } from '../types.js';

export const telnyxProvider = {
  name: 'telnyx',
  platform: 'Telnyx',
  endpoint: 'path',
  credential: { fields: { stream_auth_token: { kind: 'secret', env: 'TELNYX_STREAM_AUTH_TOKEN' } } },
  env: [
    {
      name: 'TELNYX_STREAM_AUTH_TOKEN',
      type: 'secret',
      accepts: 'any text',
      defaultRule:
        'unset: Telnyx streams of tenant default are refused (401), unless it stores provider_auth.telnyx',
      description:
        "The `stream_auth_token` set on tenant `default`'s Telnyx streams: `/v1/media/telnyx` requires it in `x-telnyx-streaming-auth-token`.",
    },
  ],
  redact: ['req.headers["x-telnyx-streaming-auth-token"]', 'headers["x-telnyx-streaming-auth-token"]'],
} as const satisfies ProviderDialectDecl;
