/**
 * A voice bot written with the OpenAI Agents SDK, exactly as one is written for Twilio: a WebSocket
 * server whose connections are Twilio Media Streams, each handed to `TwilioRealtimeTransportLayer`. Put
 * behind voicebridge with `"dialect":"twilio"`, it takes calls from any provider the bridge serves.
 *
 *   npm run example:agents-bot                 # the bot on :8765, its model the local Realtime stand-in
 *   OPENAI_API_KEY=sk-... REALTIME_URL=wss://api.openai.com/v1/realtime?model=gpt-realtime \
 *     npm run example:agents-bot               # the same bot on OpenAI's servers
 *
 * Then: BOT_URL=ws://127.0.0.1:8765 BOT_DIALECT=twilio npm start, and npm run call.
 */
import type { AddressInfo } from 'node:net';
import { TwilioRealtimeTransportLayer } from '@openai/agents-extensions';
import { RealtimeAgent, RealtimeSession } from '@openai/agents-realtime';
import { WebSocketServer } from 'ws';

export interface AgentsBotOptions {
  /** Port to listen on (0: any free one). */
  readonly port: number;
  readonly host?: string;
  /** The Realtime server the agent's model runs on. */
  readonly realtimeUrl: string;
  readonly apiKey: string;
  readonly instructions: string;
}

export interface AgentsBot {
  /** The URL to give the bridge as the bot's `url`. */
  readonly url: string;
  close(): Promise<void>;
}

export async function startAgentsBot(o: AgentsBotOptions): Promise<AgentsBot> {
  const sessions = new Set<RealtimeSession>();
  const wss = new WebSocketServer({ port: o.port, host: o.host ?? '127.0.0.1' });
  wss.on('connection', (ws) => {
    const agent = new RealtimeAgent({ name: 'Receptionist', instructions: o.instructions });
    const transport = new TwilioRealtimeTransportLayer({ twilioWebSocket: ws, url: o.realtimeUrl });
    // Twilio's audio is µ-law 8 kHz both ways: said explicitly, because version 0.20 of the SDK otherwise
    // announces its PCM default to the model while passing the µ-law it gets.
    const session = new RealtimeSession(agent, {
      transport,
      model: 'gpt-realtime',
      config: { audio: { input: { format: 'g711_ulaw' }, output: { format: 'g711_ulaw' } } },
    });
    sessions.add(session);
    ws.on('close', () => {
      session.close();
      sessions.delete(session);
    });
    session.connect({ apiKey: o.apiKey }).catch((err: unknown) => {
      console.error(`agents-sdk-bot: the model connection failed: ${(err as Error).message}`);
      ws.close(1011);
    });
  });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const { port } = wss.address() as AddressInfo;
  return {
    url: `ws://${o.host ?? '127.0.0.1'}:${port}`,
    async close() {
      for (const s of sessions) s.close();
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
