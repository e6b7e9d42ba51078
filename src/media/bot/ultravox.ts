/**
 * The `ultravox` dialect: the bridge creates an Ultravox call on the `serverWebSocket` medium and joins
 * it. It takes no `url`: each dial is two steps, the first an HTTP call (WsLink's `resolve()`, pre-dial.ts).
 *
 *   create:      `POST {api_base}/api/calls` with `X-API-Key`, the body the tenant's `settings`, then
 *                `instructions` as `systemPrompt`, `voice` and `model` (a field set by name wins over the
 *                same key in `settings`), then `medium` (always the bridge's own: `serverWebSocket` at the
 *                caller's input and output rates, and `clientBufferSizeMs`), then the call's tools, bounded by BOT_CONNECT_TIMEOUT_MS
 *   join:        the answer's `joinUrl`, dialled as it is (for a tenant's bot, its host held to
 *                BOT_URL_ALLOWED_HOSTS); no first message
 *   redial:      a call's socket is joined once: every dial creates a call. After one was joined, the next
 *                is created with `?priorCallId=` so the agent keeps the conversation so far (not when
 *                `settings` hold `initialMessages`, which Ultravox refuses beside it; nor after a create
 *                with it was refused)
 *   caller:      binary PCM16 frames as they come, at the caller's own input rate (a PCM16 caller passes
 *                with no DSP, a G.711 one is only decoded); the model's at its output rate
 *   model:       binary PCM16, paced to the caller by the outbound writer
 *   buffer:      `clientBufferSizeMs` is large (CLIENT_BUFFER_MS, at most half of OUTBOUND_BUFFER_MS so
 *                nothing is shed), as Ultravox advises when the client honours `playback_clear_buffer`: a
 *                reply comes far ahead of real time and waits in the bridge's queue, so a stall of the
 *                network is never heard, and barge-in depends on the clear alone
 *   barge-in:    `playback_clear_buffer`: the caller's playback is cleared (bridge queue, DSP, provider
 *                `clear`). The socket keeps order, so every frame of the cut reply came before the
 *                message, and the clear drops it all
 *   DTMF:        `user_text_message` "[DTMF 5]" (BOT_DTMF: `text` with urgency `later`, taken in with the
 *                next turn; `respond` with urgency `soon`, a reply at the next opportunity without cutting
 *                the agent off; `ignore`)
 *   hang-up:     a close with 1000 is the agent ending the call (its hang-up tool, `maxDuration`): the
 *                caller hears what is queued, then the call ends. Any other close is a drop, redialled
 *   keep-alive:  WsLink's heartbeat (WebSocket pings, answered by any server); the data message `ping` is
 *                Ultravox's latency probe and is not sent
 *   data:        `call_started` logged with the call id; `state`, `transcript` and `debug` at debug level
 *                (a transcript's role and length, never its words); `pong` ignored; anything else is
 *                skipped and counted as a bad frame
 *   tools:       the call's tools go in the create-call body as `selectedTools` client tools (a
 *                `temporaryTool` with `client`, the schema's properties as body parameters), after any
 *                of `settings`; a `client_tool_invocation` runs one (src/tools/) and is answered with
 *                `client_tool_result` `{invocationId, result}` (the output's JSON), in `#toolInvocation`,
 *                the one place tool calls are mapped; a call without tools answers errorType `undefined`
 *   reprompt:    a `user_text_message` with urgency `soon` (the idle policy)
 */

import type { DtmfMode } from '../../dialects/bot/speech.js';
import { ultravox } from '../../dialects/bot/ultravox.js';
import { BridgeError } from '../../errors.js';
import type { SessionFormat } from '../format.js';
import type { BotDialect } from './dialect.js';
import { type DialTarget, PreDialError, requestJson } from './pre-dial.js';
import type { BotCall, BotFormats, BotTools, CallerPort, ToolSpec } from './types.js';
import { WsLink, type WsLinkOptions } from './ws-link.js';

/** The client buffer the server is told of: its docs' own suggestion for a client that honours the clear. */
export const CLIENT_BUFFER_MS = 30_000;

/**
 * How long Ultravox waits for a client tool's result: the longest tool (a consult's 30 s, a webhook's
 * 30 s at most) and a margin, so the bridge's own bound answers first.
 */
export const TOOL_TIMEOUT_S = 35;

/** The path of create-call under `api_base`. */
export const CALLS_PATH = '/api/calls';

/**
 * The leg's formats: PCM16 at the caller's own rates, each way (Ultravox takes any rate, and
 * `inputSampleRate` and `outputSampleRate` apart), so a PCM16 caller passes with no DSP at all.
 */
export function ultravoxFormats(caller: SessionFormat): BotFormats {
  return {
    toBot: { codec: 'slin', rate: caller.inputRate },
    fromBot: { codec: 'slin', rate: caller.outputRate },
  };
}

/** `clientBufferSizeMs` for a bridge that holds `outboundBufferMs` of bot audio at most. */
export function clientBufferMs(outboundBufferMs: number): number {
  return Math.min(CLIENT_BUFFER_MS, Math.floor(outboundBufferMs / 2));
}

export interface CallBodyInput {
  readonly settings?: Readonly<Record<string, unknown>> | undefined;
  readonly instructions?: string | undefined;
  readonly voice?: string | undefined;
  readonly model?: string | undefined;
  readonly inputRate: number;
  readonly outputRate: number;
  readonly clientBufferSizeMs: number;
  /** The call's tools, declared as client tools after any `selectedTools` of `settings`. */
  readonly tools?: readonly ToolSpec[] | undefined;
}

/**
 * The create-call body: `settings` first, then the fields set by name over them, then the medium, which
 * is always the bridge's (a `medium` in `settings` is replaced whole), and the call's tools added to
 * `selectedTools`.
 */
export function createCallBody(o: CallBodyInput): Record<string, unknown> {
  const tools = o.tools ?? [];
  const own = o.settings?.selectedTools;
  return {
    ...o.settings,
    ...(o.instructions !== undefined && { systemPrompt: o.instructions }),
    ...(o.voice !== undefined && { voice: o.voice }),
    ...(o.model !== undefined && { model: o.model }),
    ...(tools.length > 0 && {
      selectedTools: [...(Array.isArray(own) ? own : []), ...tools.map(clientTool)],
    }),
    medium: {
      serverWebSocket: {
        inputSampleRate: o.inputRate,
        outputSampleRate: o.outputRate,
        clientBufferSizeMs: o.clientBufferSizeMs,
      },
    },
  };
}

/**
 * One of the call's tools as an Ultravox client tool: a `temporaryTool` with `client`, its JSON Schema's
 * properties as body parameters (the only kind a client tool takes), each with its schema and whether
 * `required` names it, and a timeout the longest tool fits in.
 */
export function clientTool(t: ToolSpec): Record<string, unknown> {
  const props = t.parameters.properties;
  const required = Array.isArray(t.parameters.required) ? t.parameters.required : [];
  const entries = typeof props === 'object' && props !== null ? Object.entries(props) : [];
  return {
    temporaryTool: {
      modelToolName: t.name,
      description: t.description,
      dynamicParameters: entries.map(([name, schema]) => ({
        name,
        location: 'PARAMETER_LOCATION_BODY',
        schema,
        required: required.includes(name),
      })),
      timeout: `${TOOL_TIMEOUT_S}s`,
      client: {},
    },
  };
}

export interface UltravoxBotOptions extends WsLinkOptions {
  readonly formats: BotFormats;
  /** The create-call URL is `${apiBase}/api/calls`; `url` names it in logs. */
  readonly apiBase: string;
  readonly apiKey?: string | undefined;
  readonly settings?: Readonly<Record<string, unknown>> | undefined;
  readonly instructions?: string | undefined;
  readonly voice?: string | undefined;
  readonly model?: string | undefined;
  readonly dtmf?: DtmfMode | undefined;
  readonly clientBufferSizeMs: number;
  readonly tools?: BotTools | undefined;
}

/** A data message from the server, as far as it is read here. */
interface DataMessage {
  readonly type: string;
  readonly [field: string]: unknown;
}

export class UltravoxBot extends WsLink {
  readonly #o: UltravoxBotOptions;
  readonly #body: Record<string, unknown>;
  /** The call the last create answered with, until its socket opens, and the call it continues. */
  #created: string | undefined;
  #createdAfter: string | undefined;
  /** The last call joined: the next create continues it. */
  #joined: string | undefined;

  constructor(call: BotCall, port: CallerPort, o: UltravoxBotOptions) {
    super(call, port, o);
    this.#o = o;
    this.#body = createCallBody({
      settings: o.settings,
      instructions: o.instructions,
      voice: o.voice,
      model: o.model,
      inputRate: o.formats.toBot.rate,
      outputRate: o.formats.fromBot.rate,
      clientBufferSizeMs: o.clientBufferSizeMs,
      tools: o.tools?.specs,
    });
    this.start();
  }

  audio(pcm: Uint8Array): void {
    if (!this.connected) {
      this.hold(pcm);
      return;
    }
    this.sendAudio(pcm);
  }

  dtmf(digit: string): void {
    const mode = this.#o.dtmf ?? 'text';
    if (mode === 'ignore') return;
    this.#send({
      type: 'user_text_message',
      text: `[DTMF ${digit}]`,
      urgency: mode === 'respond' ? 'soon' : 'later',
    });
  }

  /** Asks the agent to speak (the idle policy): a user text it answers at the next opportunity. */
  prompt(text: string): void {
    this.#send({ type: 'user_text_message', text, urgency: 'soon' });
  }

  /** The dialect places no marks: nothing is reported to it. */
  mark(): void {}

  /** Creates the call this dial joins (see the header); its failures are PreDialErrors naming the route. */
  protected override resolve(signal: AbortSignal): Promise<DialTarget> {
    return this.#createCall(signal);
  }

  async #createCall(signal: AbortSignal): Promise<DialTarget> {
    const key = this.#o.apiKey;
    if (key === undefined)
      throw new PreDialError('has no api_key: Ultravox creates a call only with one', { final: true });
    const prior =
      this.#joined !== undefined && this.#body.initialMessages === undefined ? this.#joined : undefined;
    const url = prior === undefined ? this.o.url : `${this.o.url}?priorCallId=${encodeURIComponent(prior)}`;
    let answer: unknown;
    try {
      answer = await requestJson({
        method: 'POST',
        url,
        headers: { 'x-api-key': key },
        body: this.#body,
        signal,
      });
    } catch (err) {
      if (err instanceof PreDialError) {
        // A refused continuation is not asked for again: the next call starts afresh.
        if (prior !== undefined && err.status !== undefined) this.#joined = undefined;
        const detail = err.detail([key]);
        if (detail !== undefined)
          this.log.warn(
            { bot: this.name, status: err.status, detail },
            'ultravox refused to create the call',
          );
      }
      throw err;
    }
    const o = (typeof answer === 'object' && answer !== null ? answer : {}) as Record<string, unknown>;
    if (typeof o.joinUrl !== 'string' || o.joinUrl === '')
      throw new PreDialError(`POST ${this.name} answered without a joinUrl`);
    this.#created = typeof o.callId === 'string' ? o.callId : undefined;
    this.#createdAfter = prior;
    return { url: o.joinUrl };
  }

  protected opened(): void {
    this.#joined = this.#created;
    this.log.info(
      { bot: this.name, call_id: this.#joined, prior_call_id: this.#createdAfter },
      'ultravox call joined',
    );
  }

  protected received(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      if ((data.length & 1) !== 0)
        throw new BridgeError('odd_length', `PCM16 audio must be an even byte count, got ${data.length}`);
      if (data.length > 0) this.port.audio(data);
      return;
    }
    let msg: unknown;
    try {
      msg = JSON.parse(data.toString('utf8'));
    } catch {
      throw new BridgeError('bad_json', 'a data message from Ultravox is not JSON');
    }
    if (typeof msg !== 'object' || msg === null || typeof (msg as DataMessage).type !== 'string')
      throw new BridgeError('unknown_event', 'a data message from Ultravox has no type');
    this.#message(msg as DataMessage);
  }

  #message(m: DataMessage): void {
    switch (m.type) {
      case 'playback_clear_buffer':
        this.port.clear();
        return;
      case 'state':
        this.log.debug({ state: m.state }, 'ultravox state');
        return;
      case 'transcript':
        if (m.final === true)
          this.log.debug(
            { role: m.role, medium: m.medium, ordinal: m.ordinal, chars: String(m.text ?? '').length },
            'ultravox transcript',
          );
        return;
      case 'call_started':
        this.log.debug({ call_id: m.callId }, 'ultravox call started');
        return;
      case 'client_tool_invocation':
        this.#toolInvocation(m);
        return;
      case 'debug':
        this.log.debug({ chars: String(m.message ?? '').length }, 'ultravox debug message');
        return;
      case 'pong':
        return;
      default:
        throw new BridgeError('unknown_event', `unknown Ultravox data message type "${m.type.slice(0, 64)}"`);
    }
  }

  /**
   * The agent asks the bridge to run a client tool: the call's tools run it (src/tools/), and its output
   * goes back as the result's JSON text, to the invocation's own id. Ultravox's conversation waits for
   * the result (the caller hears hold audio meanwhile); `respond` false (after `end_call`) answers with
   * `agentReaction` `listens`, so the agent does not speak again. Without tools, Ultravox's `undefined`.
   */
  #toolInvocation(m: DataMessage): void {
    if (typeof m.invocationId !== 'string' || m.invocationId === '')
      throw new BridgeError('invalid_field', 'client_tool_invocation needs an invocationId string', {
        field: 'invocationId',
      });
    if (typeof m.toolName !== 'string')
      throw new BridgeError('invalid_field', 'client_tool_invocation needs a toolName string', {
        field: 'toolName',
      });
    const id = m.invocationId;
    const tools = this.#o.tools;
    if (tools === undefined) {
      const tool = m.toolName.slice(0, 64);
      this.log.info({ tool }, 'ultravox asked for a client tool; this call has no tools');
      this.#send({
        type: 'client_tool_result',
        invocationId: id,
        errorType: 'undefined',
        errorMessage: `this call has no client tool named "${tool}"`,
      });
      return;
    }
    tools.call({ callId: id, name: m.toolName, arguments: m.parameters ?? {} }, (output, respond) =>
      this.#send({
        type: 'client_tool_result',
        invocationId: id,
        result: JSON.stringify(output),
        ...(!respond && { agentReaction: 'listens' }),
      }),
    );
  }

  /** Closing the socket ends the Ultravox call: nothing to say first. */
  protected farewell(): void {}

  /** Ultravox has no data message for the bridge's notices: they are not sent. */
  protected override notice(): string | undefined {
    return undefined;
  }

  /** A close with 1000 is the agent ending the call (after its last audio); others are drops. */
  protected override closedAsHangup(code: number): boolean {
    return code === 1000;
  }

  #send(m: Record<string, unknown>): void {
    this.sendText(JSON.stringify(m));
  }
}

/** The `ultravox` dialect (src/dialects/bot/ultravox.ts): creates an Ultravox call and joins it. */
export const ultravoxBot: BotDialect = {
  decl: ultravox,
  format: (_settings, caller) => ultravoxFormats(caller),
  create: (call, port, { link, settings, formats, deps, tools }) => {
    const apiBase = settings.apiBase ?? ultravox.defaults.apiBase;
    return new UltravoxBot(call, port, {
      ...link,
      url: `${apiBase}${CALLS_PATH}`,
      formats,
      apiBase,
      apiKey: settings.apiKey,
      settings: settings.settings,
      instructions: settings.instructions,
      voice: settings.voice,
      model: settings.model,
      dtmf: settings.dtmf,
      clientBufferSizeMs: clientBufferMs(deps.ctx.config.outboundBufferMs),
      tools,
    });
  },
};
