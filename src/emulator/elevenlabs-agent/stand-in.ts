/**
 * The ElevenLabs Agents stand-in as `npm run bot-emulator -- --dialect elevenlabs-agent` starts it: its
 * own flags (the default agent's formats, privacy and limits, the keep-alive, barge-in's late audio and
 * event ids), and what it prints once listening.
 */
import {
  LEAD_FLAG,
  LEAD_USAGE,
  leadMs,
  TURN_SILENCE_FLAG,
  TURN_SILENCE_USAGE,
  turnSilenceMs,
} from '../s2s/stand-in.js';
import { MAX_REPLY_MS } from '../s2s/voice.js';
import type { StandIn } from '../stand-in.js';
import { FORMAT_NAMES, type FormatName, isFormatName } from './formats.js';
import { CONVERSATION_PATH, createElevenLabsEmulator } from './server.js';

export const elevenLabsAgentStandIn: StandIn = {
  port: 9292,
  flags: {
    ...TURN_SILENCE_FLAG,
    ...LEAD_FLAG,
    'agent-id': { type: 'string', default: 'agent_standin' },
    private: { type: 'boolean', default: false },
    'input-format': { type: 'string', default: 'pcm_16000' },
    'output-format': { type: 'string', default: 'pcm_16000' },
    'first-message-ms': { type: 'string', default: '0' },
    'max-duration-ms': { type: 'string', default: '0' },
    'ping-interval-ms': { type: 'string', default: '3000' },
    'pong-timeout-ms': { type: 'string', default: '1000' },
    'max-missed-pongs': { type: 'string', default: '1' },
    'late-audio-chunks': { type: 'string', default: '0' },
    'reply-turn-after-interruption': { type: 'string', default: 'same' },
    'interruption-event-id': { type: 'string', default: 'turn' },
    'chunk-ms': { type: 'string', default: '100' },
    'output-rate-factor': { type: 'string', default: '4' },
  },
  usage: `${TURN_SILENCE_USAGE}${LEAD_USAGE}  --agent-id            the agent id printed in the WebSocket URL (default agent_standin); any id works
  --private             agents need a signed URL (get-signed-url with the key) to connect
  --input-format, --output-format
                        ${FORMAT_NAMES.join(', ')} (default pcm_16000)
  --first-message-ms    the agent greets with a reply this long (default 0: the caller speaks first)
  --max-duration-ms     the conversation ends after this long (default 0: no limit)
  --ping-interval-ms    a ping this often (default 3000; 0: none)
  --pong-timeout-ms     a pong later than this is missed (default 1000)
  --max-missed-pongs    missed pongs in a row that close the socket (default 1)
  --late-audio-chunks   chunks of an interrupted reply sent after the interruption (default 0)
  --reply-turn-after-interruption
                        same (the reply shares the interruption's event_id, as the real server) or next
  --interruption-event-id
                        turn (the interruption carries the new turn's id, as the real server) or cut
                        (the id of the turn it cuts)
  --chunk-ms            audio per audio event (default 100)
  --output-rate-factor  audio goes out this many times faster than real time; 0: socket speed (default 4)
`,
  // A public agent, reached by its id alone (with a key the bridge would ask ElevenLabs' API for a signed URL).
  bot: (base) => ({
    dialect: 'elevenlabs-agent',
    url: `${base.replace(/^http/, 'ws')}${CONVERSATION_PATH}`,
    agent_id: 'agent_standin',
  }),
  sessionsPath: '/emulator/elevenlabs-agent/sessions',
  async start(v, c, num, fail) {
    const format = (name: string): FormatName => {
      const f = v[name];
      if (!isFormatName(f)) return fail(`--${name} must be one of ${FORMAT_NAMES.join(', ')}, got ${f}`);
      return f;
    };
    const turn = v['reply-turn-after-interruption'];
    if (turn !== 'same' && turn !== 'next')
      return fail(`--reply-turn-after-interruption must be same or next, got ${turn}`);
    const interruptionId = v['interruption-event-id'];
    if (interruptionId !== 'turn' && interruptionId !== 'cut')
      return fail(`--interruption-event-id must be turn or cut, got ${interruptionId}`);
    const agentId = v['agent-id'] as string;
    if (agentId === '') fail('--agent-id must not be empty');
    const emulator = createElevenLabsEmulator({
      ...(c.apiKey !== undefined ? { apiKey: c.apiKey } : {}),
      replyMs: c.replyMs,
      turnSilenceMs: turnSilenceMs(num),
      defaultAgent: {
        private: v.private === true,
        inputFormat: format('input-format'),
        outputFormat: format('output-format'),
        firstMessageMs: num('first-message-ms', 0, MAX_REPLY_MS),
        maxDurationMs: num('max-duration-ms', 0, 86_400_000),
      },
      pingIntervalMs: num('ping-interval-ms', 0, 600_000),
      pongTimeoutMs: num('pong-timeout-ms', 1, 600_000),
      maxMissedPongs: num('max-missed-pongs', 1, 1000),
      lateAudioChunks: num('late-audio-chunks', 0, 1000),
      replyTurnAfterInterruption: turn,
      interruptionEventId: interruptionId,
      chunkMs: num('chunk-ms', 10, 1000),
      outputRateFactor: num('output-rate-factor', 0, 1000, true),
      leadMs: leadMs(num),
      log: c.log,
    });
    const url = await emulator.listen(c.port, c.host);
    const key = c.apiKey === undefined ? 'any key' : 'the --api-key';
    return {
      lines: [
        `elevenlabs-agent stand-in listening on ${url}`,
        `  WebSocket: ${emulator.wsUrl(agentId)}${v.private === true ? ' (private: connect with a signed URL)' : ''}`,
        `  signed URL: GET ${url}/v1/convai/conversation/get-signed-url?agent_id=${agentId} (xi-api-key: ${key})`,
        `  control API: ${url}/emulator/elevenlabs-agent/sessions`,
      ],
      close: () => emulator.close(),
    };
  },
};
