/**
 * The Ultravox stand-in as `npm run bot-emulator -- --dialect ultravox` starts it: its own flags, and
 * what it prints once listening.
 */
import { TURN_SILENCE_FLAG, TURN_SILENCE_USAGE, turnSilenceMs } from '../s2s/stand-in.js';
import { STAND_IN_KEY, type StandIn } from '../stand-in.js';
import { createUltravoxEmulator } from './server.js';

export const ultravoxStandIn: StandIn = {
  port: 9393,
  flags: { ...TURN_SILENCE_FLAG, 'chunk-ms': { type: 'string', default: '20' } },
  usage: `${TURN_SILENCE_USAGE}  --chunk-ms            audio per binary frame (default 20)
`,
  bot: (base) => ({ dialect: 'ultravox', api_base: base, api_key: STAND_IN_KEY }),
  sessionsPath: '/emulator/ultravox/sessions',
  async start(_v, c, num) {
    const emulator = createUltravoxEmulator({
      ...(c.apiKey !== undefined ? { apiKey: c.apiKey } : {}),
      replyMs: c.replyMs,
      turnSilenceMs: turnSilenceMs(num),
      chunkMs: num('chunk-ms', 10, 1000),
      log: c.log,
    });
    const url = await emulator.listen(c.port, c.host);
    return {
      lines: [
        `ultravox stand-in listening on ${url}`,
        `  create a call: POST ${url}/api/calls (X-API-Key: ${c.apiKey === undefined ? 'any key' : 'the --api-key'}), medium.serverWebSocket; then dial its joinUrl`,
        `  control API: ${url}/emulator/ultravox/sessions`,
      ],
      close: () => emulator.close(),
    };
  },
};
