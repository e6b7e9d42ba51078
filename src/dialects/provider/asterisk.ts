/**
 * The `asterisk` provider dialect, declared: Asterisk `chan_websocket` at
 * `/v1/media/asterisk[/<tenant>]`, authenticated by HTTP Basic (`websocket_client.conf`). Its wire:
 * src/media/providers/asterisk.ts; its emulator twin: src/emulator/dialects/asterisk.ts.
 */
import type { ProviderDialectDecl } from '../types.js';

export const asteriskProvider = {
  name: 'asterisk',
  platform: 'Asterisk',
  endpoint: 'path',
  credential: {
    fields: {
      username: { kind: 'name', env: 'ASTERISK_WS_USERNAME' },
      password: { kind: 'secret', env: 'ASTERISK_WS_PASSWORD' },
    },
  },
  env: [
    {
      name: 'ASTERISK_WS_USERNAME',
      type: 'text',
      accepts: 'any text without a colon',
      defaultRule: 'unset: Asterisk chan_websocket streams of tenant default are refused (401)',
      description:
        "The HTTP Basic user name of tenant `default`'s Asterisk chan_websocket streams (`username` in the `websocket_client.conf` client).",
    },
    {
      name: 'ASTERISK_WS_PASSWORD',
      type: 'secret',
      accepts: 'any text',
      defaultRule: 'unset: Asterisk chan_websocket streams of tenant default are refused (401)',
      description:
        "The HTTP Basic password of tenant `default`'s Asterisk chan_websocket streams (`password` in `websocket_client.conf`), with `ASTERISK_WS_USERNAME`.",
    },
  ],
} as const satisfies ProviderDialectDecl;
