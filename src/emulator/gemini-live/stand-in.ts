/**
 * The Gemini Live stand-in as `npm run bot-emulator -- --dialect gemini-live` starts it: its own flags,
 * and what it prints once listening.
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
import { createGeminiLiveEmulator } from './server.js';

export const geminiLiveStandIn: StandIn = {
  port: 9494,
  flags: {
    ...TURN_SILENCE_FLAG,
    ...LEAD_FLAG,
    'chunk-ms': { type: 'string', default: '40' },
    'output-rate-factor': { type: 'string', default: '4' },
    'setup-delay-ms': { type: 'string', default: '0' },
    'connection-ms': { type: 'string', default: '600000' },
    'go-away-lead-ms': { type: 'string', default: '60000' },
    'json-frames': { type: 'string', default: 'binary' },
    'refuse-resume-while-open': { type: 'boolean', default: false },
  },
  usage: `${TURN_SILENCE_USAGE}${LEAD_USAGE}  --chunk-ms            audio per modelTurn part (default 40)
  --output-rate-factor  audio goes out this many times faster than real time; 0: socket speed (default 4)
  --setup-delay-ms      wait before setupComplete (default 0)
  --connection-ms       a connection's life: goAway, then close 1011 (default 600000; 0: no limit)
  --go-away-lead-ms     goAway comes this long before the end (default 60000)
  --json-frames         binary (as Google sends) or text (default binary)
  --refuse-resume-while-open
                        a resumption while the old connection is open is closed with 1011
`,
  bot: (base) => ({
    dialect: 'gemini-live',
    url: `${base.replace(/^http/, 'ws')}/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent`,
    api_key: STAND_IN_KEY,
  }),
  sessionsPath: '/emulator/gemini-live/sessions',
  async start(v, c, num, fail) {
    const jsonFrames = v['json-frames'];
    if (jsonFrames !== 'binary' && jsonFrames !== 'text')
      return fail(`--json-frames must be binary or text, got ${jsonFrames}`);
    const emulator = createGeminiLiveEmulator({
      ...(c.apiKey !== undefined ? { apiKey: c.apiKey } : {}),
      replyMs: c.replyMs,
      turnSilenceMs: turnSilenceMs(num),
      chunkMs: num('chunk-ms', 10, 1000),
      outputRateFactor: num('output-rate-factor', 0, 1000, true),
      leadMs: leadMs(num),
      setupDelayMs: num('setup-delay-ms', 0, 60_000),
      connectionMs: num('connection-ms', 0, 86_400_000),
      goAwayLeadMs: num('go-away-lead-ms', 0, 600_000),
      jsonFrames,
      refuseResumeWhileOpen: v['refuse-resume-while-open'] === true,
      log: c.log,
    });
    const url = await emulator.listen(c.port, c.host);
    return {
      lines: [
        `gemini-live stand-in listening on ${url}`,
        `  WebSocket: ${emulator.wsUrl(c.apiKey ?? 'any-key')} (or the key as x-goog-api-key)`,
        `  @google/genai: new GoogleGenAI({ apiKey, httpOptions: { baseUrl: '${url}' } })`,
        `  control API: ${url}/emulator/gemini-live/sessions`,
      ],
      close: () => emulator.close(),
    };
  },
};
