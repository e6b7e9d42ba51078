/**
 * The `bridge` dialect: our own protocol toward a bot's WebSocket server (docs/protocol.md). The bot is
 * told `session_start` with `media` at its format (PCM16 at BOT_SAMPLE_RATE) and the call's `tools`
 * (docs/tools.md), gets caller audio as binary frames and `dtmf`/`mark`/`session_end` events; it sends
 * binary audio back plus `mark`, `clear`, `dtmf` and `session_end`, and is told of bad frames with `error`
 * events. Its model calls a tool with `tool_call {id, name, arguments}` and gets `tool_result {id,
 * output}`; the idle policy asks it to speak with `prompt {text}`.
 */

import { bridge } from '../../dialects/bot/bridge.js';
import { BridgeError } from '../../errors.js';
import type { Format } from '../../pipeline/types.js';
import { errorFrame, parseBotEvent } from '../protocol.js';
import type { BotDialect } from './dialect.js';
import type { BotCall, BotTools, CallerPort } from './types.js';
import { WsLink, type WsLinkOptions } from './ws-link.js';

/** PCM16 at the configured bot rate, both ways. */
export function bridgeFormat(botRate: number): Format {
  return { codec: 'slin', rate: botRate };
}

export class BridgeBot extends WsLink {
  readonly #rate: number;
  readonly #tools: BotTools | undefined;

  constructor(
    call: BotCall,
    port: CallerPort,
    o: WsLinkOptions & { readonly botRate: number; readonly tools?: BotTools | undefined },
  ) {
    super(call, port, o);
    this.#rate = o.botRate;
    this.#tools = o.tools;
    this.start();
  }

  prompt(text: string): void {
    this.sendText(JSON.stringify({ event: 'prompt', text }));
  }

  audio(pcm: Uint8Array): void {
    if (!this.connected) {
      this.hold(pcm);
      return;
    }
    this.sendAudio(pcm);
  }

  dtmf(digit: string): void {
    this.sendText(JSON.stringify({ event: 'dtmf', digit }));
  }

  mark(name: string): void {
    this.sendText(JSON.stringify({ event: 'mark', name }));
  }

  protected opened(): void {
    const c = this.call;
    const rate = this.#rate;
    this.sendText(
      JSON.stringify({
        event: 'session_start',
        session_id: c.session_id,
        tenant: c.tenant,
        customer_phone: c.customer_phone,
        direction: c.direction,
        started_at: c.started_at,
        media: {
          codec: 'slin',
          sample_rate: rate,
          output_sample_rate: rate,
          encoding: 'binary',
          chunk_bytes: (rate / 50) * 2,
        },
        ...(this.#tools !== undefined && { tools: this.#tools.specs }),
      }),
    );
  }

  protected received(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      if ((data.length & 1) !== 0)
        throw new BridgeError(
          'odd_length',
          `bot audio must be PCM16 (an even byte count), got ${data.length}`,
        );
      this.port.audio(data);
      return;
    }
    const ev = parseBotEvent(data.toString('utf8'));
    switch (ev.event) {
      case 'clear':
        this.port.clear();
        return;
      case 'mark':
        this.port.mark(ev.name);
        return;
      case 'dtmf':
        this.port.dtmf(ev.digit);
        return;
      case 'session_end':
        this.hangingUp = true;
        this.port.hangup(ev.reason ?? 'bot');
        return;
      case 'tool_call': {
        const tools = this.#tools;
        if (tools === undefined) {
          this.sendText(
            JSON.stringify({
              event: 'tool_result',
              id: ev.id,
              output: { error: 'not_found', message: 'this call has no tools (bot.tools is empty)' },
            }),
          );
          return;
        }
        const id = ev.id;
        tools.call({ callId: id, name: ev.name, arguments: ev.arguments }, (output) =>
          this.sendText(JSON.stringify({ event: 'tool_result', id, output })),
        );
        return;
      }
    }
  }

  protected override rejected(err: BridgeError): void {
    this.sendText(errorFrame(err));
  }

  protected farewell(reason: string): void {
    this.sendText(JSON.stringify({ event: 'session_end', reason }));
  }
}

/** The `bridge` dialect (src/dialects/bot/bridge.ts): PCM16 at BOT_SAMPLE_RATE to a ws bot. */
export const bridgeBot: BotDialect = {
  decl: bridge,
  format: (_settings, _caller, botRate) => bridgeFormat(botRate),
  create: (call, port, { link, deps, tools }) =>
    new BridgeBot(call, port, { ...link, botRate: deps.ctx.config.botSampleRate, tools }),
};
