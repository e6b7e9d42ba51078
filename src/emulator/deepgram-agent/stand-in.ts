/**
 * The Deepgram Voice Agent stand-in as `npm run bot-emulator -- --dialect deepgram-agent` starts it:
 * its own flags, and what it prints once listening.
 */
import {
  LEAD_FLAG,
  LEAD_USAGE,
  leadMs,
  TURN_SILENCE_FLAG,
  TURN_SILENCE_USAGE,
  turnSilenceMs,
} from '../s2s/stand-in.js';
import { STAND_IN_KEY, type StandIn } from '../stand-in.js';
import { AGENT_PATH, createDeepgramAgentEmulator } from './server.js';

export const deepgramAgentStandIn: StandIn = {
  port: 9595,
  flags: {
    ...TURN_SILENCE_FLAG,
    ...LEAD_FLAG,
    'chunk-ms': { type: 'string', default: '20' },
    'output-rate-factor': { type: 'string', default: '4' },
    'settings-delay-ms': { type: 'string', default: '0' },
    'idle-timeout-ms': { type: 'string', default: '10000' },
    'max-session-ms': { type: 'string', default: '7200000' },
    'late-audio-chunks': { type: 'string', default: '0' },
  },
  usage: `${TURN_SILENCE_USAGE}${LEAD_USAGE}  --chunk-ms            audio per binary frame (default 20)
  --output-rate-factor  audio goes out this many times faster than real time; 0: socket speed (default 4)
  --settings-delay-ms   wait before SettingsApplied (default 0)
  --idle-timeout-ms     no audio nor KeepAlive for this long: Error CLIENT_MESSAGE_TIMEOUT, close
                        (default 10000; 0: never)
  --max-session-ms      a session's longest life (default 7200000)
  --late-audio-chunks   chunks of an interrupted reply sent after UserStartedSpeaking (default 0)
`,
  bot: (base) => ({
    dialect: 'deepgram-agent',
    url: `${base.replace(/^http/, 'ws')}${AGENT_PATH}`,
    api_key: STAND_IN_KEY,
  }),
  sessionsPath: '/emulator/deepgram-agent/sessions',
  async start(_v, c, num) {
    const emulator = createDeepgramAgentEmulator({
      ...(c.apiKey !== undefined ? { apiKey: c.apiKey } : {}),
      replyMs: c.replyMs,
      turnSilenceMs: turnSilenceMs(num),
      chunkMs: num('chunk-ms', 10, 1000),
      outputRateFactor: num('output-rate-factor', 0, 1000, true),
      leadMs: leadMs(num),
      settingsDelayMs: num('settings-delay-ms', 0, 60_000),
      idleTimeoutMs: num('idle-timeout-ms', 0, 3_600_000),
      maxSessionMs: num('max-session-ms', 0, 86_400_000),
      lateAudioChunks: num('late-audio-chunks', 0, 1000),
      log: c.log,
    });
    const url = await emulator.listen(c.port, c.host);
    return {
      lines: [
        `deepgram-agent stand-in listening on ${url}`,
        `  WebSocket: ${emulator.wsUrl()} (Authorization: Token <${c.apiKey === undefined ? 'any key' : 'the --api-key'}>)`,
        `  @deepgram/sdk: new DeepgramClient({ apiKey, baseUrl: '${url.replace(/^http/, 'ws')}' })`,
        `  control API: ${url}/emulator/deepgram-agent/sessions`,
      ],
      close: () => emulator.close(),
    };
  },
};
