/**
 * The OpenAI Realtime stand-in as `npm run realtime-emulator` (and `npm run bot-emulator -- --dialect
 * openai-realtime`) starts it: its own flags, and what it prints once listening.
 */
import { readFileSync } from 'node:fs';
import { LEAD_FLAG, LEAD_USAGE, leadMs } from '../s2s/stand-in.js';
import { STAND_IN_KEY, type StandIn } from '../stand-in.js';
import { CONTROL_PREFIX } from './control.js';
import { createRealtimeEmulator, REALTIME_PATH } from './server.js';

export const realtimeStandIn: StandIn = {
  port: 9191,
  flags: {
    'delta-ms': { type: 'string', default: '100' },
    'output-rate-factor': { type: 'string', default: '4' },
    ...LEAD_FLAG,
    'tls-cert': { type: 'string' },
    'tls-key': { type: 'string' },
  },
  usage: `  --delta-ms            audio per response.output_audio.delta (default 100)
  --output-rate-factor  deltas go out this many times faster than real time; 0: as fast as the socket
                        takes them (default 4)
${LEAD_USAGE}  --tls-cert, --tls-key PEM files: serve wss:// and https:// (the openai package's client dials wss: only)
`,
  bot: (base) => ({
    dialect: 'openai-realtime',
    url: `${base.replace(/^http/, 'ws')}${REALTIME_PATH}?model=gpt-realtime`,
    api_key: STAND_IN_KEY,
  }),
  sessionsPath: `${CONTROL_PREFIX}/sessions`,
  async start(values, c, num, fail) {
    const deltaMs = num('delta-ms', 10, 1000);
    const outputRateFactor = num('output-rate-factor', 0, 1000, true);
    const certFile = values['tls-cert'] as string | undefined;
    const keyFile = values['tls-key'] as string | undefined;
    if ((certFile === undefined) !== (keyFile === undefined)) fail('--tls-cert and --tls-key go together');
    let tls: { cert: Buffer; key: Buffer } | undefined;
    if (certFile !== undefined && keyFile !== undefined) {
      try {
        tls = { cert: readFileSync(certFile), key: readFileSync(keyFile) };
      } catch (err) {
        fail(`cannot read the TLS files: ${(err as Error).message}`);
      }
    }
    const emulator = createRealtimeEmulator({
      replyMs: c.replyMs,
      deltaMs,
      outputRateFactor,
      leadMs: leadMs(num),
      log: c.log,
      ...(c.apiKey !== undefined ? { apiKey: c.apiKey } : {}),
      ...(tls !== undefined ? { tls } : {}),
    });
    const url = await emulator.listen(c.port, c.host);
    return {
      lines: [
        `realtime stand-in listening on ${url}`,
        `  WebSocket: ${emulator.wsUrl('gpt-realtime')} (Authorization: Bearer <${c.apiKey === undefined ? 'any key' : 'the --api-key'}>)`,
        `  replies: tones of ${c.replyMs} ms (reply_ms=N in instructions for longer), ${deltaMs} ms deltas at ${outputRateFactor > 0 ? `${outputRateFactor}x real time` : 'socket speed'}`,
        `  control API: ${url}/emulator/realtime/sessions`,
      ],
      close: () => emulator.close(),
    };
  },
};
