/**
 * The `elevenlabs-agent` dialect: the bridge is a client of an ElevenLabs Agents conversation, dialled
 * at session_start.
 *
 *   dial:       `url` with `agent_id` in its query (a public agent); with an `api_key`, each dial first
 *               asks `GET {api_base}/v1/convai/conversation/get-signed-url?agent_id=` (header
 *               `xi-api-key`) and dials the `signed_url` exactly as answered. The API base and, for a
 *               tenant's bot, the signed URL's own host are held to BOT_URL_ALLOWED_HOSTS (ElevenLabs'
 *               own client pairs API and socket hosts that differ, so each is checked)
 *   open:       `conversation_initiation_client_data` with `dynamic_variables` (session_id, customer_phone,
 *               direction, tenant) and, where set, `instructions` and `voice` as overrides (the agent must
 *               allow them); the agent answers `conversation_initiation_metadata` naming its formats, and
 *               the session opens its legs at them (formatsFromBot, session.ts): the caller's audio waits
 *               until then, so a µ-law 8 kHz caller and a `ulaw_8000` agent pass with no DSP at all
 *   caller:     `{"user_audio_chunk": <base64>}` in the agent's input format, CHUNK_MS at a time
 *   agent:      `audio.audio_event.audio_base_64` to the caller, paced by the outbound writer
 *   barge-in:   `interruption {event_id N}` clears the caller's playback at once; then audio below N is
 *               dropped, and audio at N too when audio at N had come before the interruption (it belongs
 *               to the turn cut): ElevenLabs gives the reply to the interrupting turn the interruption's
 *               own id, and that reply plays (docs/bots.md)
 *   keep-alive: `ping` answered with `pong` and its event_id at once (`ping_ms` is the round trip the
 *               server measured, not a delay to wait)
 *   DTMF:       `text` (default) a `contextual_update` "[DTMF 5]" the agent takes in without answering,
 *               and `user_activity`; `respond` a `user_message` "[DTMF 5]", which it answers; `ignore`
 *   hang-up:    a normal close (1000) once the conversation started is the agent ending the call: its
 *               audio sent plays out first. A close before the agent's formats came is a failed dial
 *   tools:      declared on the agent itself (its client tools, in ElevenLabs' dashboard or API), never on
 *               the socket. A `client_tool_call` runs the tool of the call's `tools` it names through the
 *               call's tools, with its `parameters` as the arguments, and is answered with
 *               `client_tool_result` {tool_call_id, result: the output as JSON text, is_error: the output
 *               is an `{error, message}`}; a name the call has not is such an error naming it. Calls of a
 *               socket not answered when a new one opens are answered no more. Without tools, each call
 *               is answered with an error result
 *   reprompt:   a `user_message` with the idle policy's text, which the agent answers
 */
import type * as EL from '@elevenlabs/types';
import { fromBase64, toBase64 } from '../../audio/codec.js';
import { tenantDialledProblem } from '../../config/bot-url.js';
import { ELEVENLABS_API_BASE, elevenlabsAgent } from '../../dialects/bot/elevenlabs-agent.js';
import type { DtmfMode } from '../../dialects/bot/speech.js';
import { BridgeError } from '../../errors.js';
import { shownValue } from '../../log.js';
import type { Format } from '../../pipeline/types.js';
import type { BotDialect } from './dialect.js';
import { type DialTarget, PreDialError, requestJson } from './pre-dial.js';
import type { BotCall, BotFormats, BotTools, CallerPort, ToolOutput } from './types.js';
import { WsLink, type WsLinkOptions } from './ws-link.js';

/**
 * Caller audio per `user_audio_chunk`: 50 ms. ElevenLabs' browser client sends 25 ms chunks and its
 * Python client suggests 250 ms; the agent's turn-taking hears the caller no later than a chunk, so
 * 50 ms keeps that within a frame or two for 20 messages a second a call.
 */
export const CHUNK_MS = 50;

/** The agent's formats until it names them: its default, PCM16 at 16 kHz both ways. */
export const DEFAULT_FORMAT: Format = { codec: 'slin', rate: 16_000 };

/** The signed-URL route, under `api_base`. */
export const SIGNED_URL_PATH = '/v1/convai/conversation/get-signed-url';

/** Server events the bridge reads nothing of (transcripts, the agent's text, scores, metadata). */
const QUIET_EVENTS = new Set([
  'user_transcript',
  'tentative_user_transcript',
  'agent_response',
  'agent_chat_response_part',
  'agent_reasoning_response_part',
  'internal_tentative_agent_response',
  'internal_turn_probability',
  'vad_score',
  'context_usage',
  'asr_initiation_metadata',
  'agent_tool_request',
  'agent_tool_response',
  'agent_tool_response_full_payload',
  'agent_typing',
  'rich_content',
  'mcp_tool_call',
  'mcp_connection_status',
  'guardrail_triggered',
  'external_agent_connected',
  'external_agent_disconnected',
]);

/** An ElevenLabs audio format name (`pcm_16000`, `ulaw_8000`) as the pipeline's; undefined for one it has not. */
export function agentFormat(name: unknown): Format | undefined {
  if (name === 'ulaw_8000') return { codec: 'pcmu', rate: 8000 };
  const m = typeof name === 'string' ? /^pcm_(8000|16000|22050|24000|44100|48000)$/.exec(name) : null;
  return m === null ? undefined : { codec: 'slin', rate: Number(m[1]) };
}

const sameFormat = (a: Format, b: Format) => a.codec === b.codec && a.rate === b.rate;

export interface ElevenLabsBotOptions extends WsLinkOptions {
  /** The conversation URL to dial without a key (`url` with `agent_id` in its query). */
  readonly url: string;
  readonly agentId: string;
  readonly apiKey?: string | undefined;
  /** The API asked for a signed URL, without a trailing slash. */
  readonly apiBase: string;
  /** Why the tenant may not call `apiBase` (BOT_URL_ALLOWED_HOSTS), if that is so. */
  readonly apiBaseProblem?: { readonly accepts: string; readonly shown: string } | undefined;
  readonly instructions?: string | undefined;
  readonly voice?: string | undefined;
  readonly dtmf?: DtmfMode | undefined;
  readonly tools?: BotTools | undefined;
}

type ServerEvent = { readonly type?: unknown; readonly [k: string]: unknown };

export class ElevenLabsAgentBot extends WsLink {
  /** A conversation counts as reached once the agent names its formats, not when the socket opens. */
  protected override readonly confirmsOpen = true;
  readonly #o: ElevenLabsBotOptions;
  /** The formats the session took (the first connection's); a redial must name the same. */
  #formats: BotFormats | undefined;
  /** This connection's agent has named its formats: caller audio goes. */
  #live = false;
  #batch = new Uint8Array(0);
  #batched = 0;
  /** The latest interruption's event_id: audio below it is of turns cut. */
  #cutBelow = 0;
  /** Audio at #cutBelow is of the turn cut too (it came before the interruption). */
  #cutAt = false;
  /** The highest event_id of audio received on this conversation. */
  #lastAudioId = -1;
  /** Event types already logged as unknown on this call (each is logged once, then only counted). */
  readonly #unknown = new Set<string>();
  /** Client tool calls of this connection not yet answered. */
  readonly #pendingCalls = new Set<string>();
  #metadataWait: ReturnType<NonNullable<WsLinkOptions['clock']>['setTimeout']> | undefined;

  constructor(call: BotCall, port: CallerPort, o: ElevenLabsBotOptions) {
    super(call, port, o);
    this.#o = o;
    this.start();
  }

  audio(data: Uint8Array): void {
    // Before the agent named its formats (the legs wait for them), and during a redial: nothing to send.
    if (!this.#live || !this.connected) return;
    let at = 0;
    while (at < data.length) {
      const n = Math.min(data.length - at, this.#batch.length - this.#batched);
      this.#batch.set(data.subarray(at, at + n), this.#batched);
      this.#batched += n;
      at += n;
      if (this.#batched === this.#batch.length) this.#flush();
    }
  }

  dtmf(digit: string): void {
    const mode = this.#o.dtmf ?? 'text';
    if (mode === 'ignore' || !this.#live) return;
    this.#flush();
    const text = `[DTMF ${digit}]`;
    if (mode === 'respond') {
      this.#send({ type: 'user_message', text } satisfies EL.UserMessage);
      return;
    }
    this.#send({ type: 'contextual_update', text } satisfies EL.ContextualUpdate);
    this.#send({ type: 'user_activity' } satisfies EL.UserActivity);
  }

  /** ElevenLabs hears nothing of playback: no marks are placed. */
  mark(): void {}

  /** Asks the agent to speak (the idle policy): a user text, which it answers. */
  prompt(text: string): void {
    if (!this.#live) return;
    this.#flush();
    this.#send({ type: 'user_message', text } satisfies EL.UserMessage);
  }

  protected override resolve(signal: AbortSignal): Promise<DialTarget> | undefined {
    const key = this.#o.apiKey;
    if (key === undefined) return undefined;
    return this.#signedUrl(key, signal);
  }

  protected opened(): void {
    // A new conversation knows nothing of the calls the last one made: they are answered no more.
    for (const id of this.#pendingCalls) this.#o.tools?.cancel(id);
    this.#pendingCalls.clear();
    this.#live = false;
    this.#batched = 0;
    const o = this.#o;
    const agent = o.instructions === undefined ? undefined : { prompt: { prompt: o.instructions } };
    const tts = o.voice === undefined ? undefined : { voice_id: o.voice };
    const initiation: EL.ConversationInitiation = {
      type: 'conversation_initiation_client_data',
      dynamic_variables: {
        session_id: this.call.session_id,
        customer_phone: this.call.customer_phone ?? '',
        direction: this.call.direction ?? '',
        tenant: this.call.tenant,
      },
      ...((agent !== undefined || tts !== undefined) && {
        conversation_config_override: {
          ...(agent !== undefined && { agent }),
          ...(tts !== undefined && { tts }),
        },
      }),
    };
    this.#send(initiation);
    // An agent that never names its formats is of no use: the socket is cut and redialled.
    const clock = o.clock;
    if (clock !== undefined) {
      this.#metadataWait = clock.setTimeout(() => {
        this.#metadataWait = undefined;
        if (this.#live) return;
        this.log.warn(
          { bot: this.name, wait_ms: o.connectTimeoutMs },
          'agent named no audio formats in time; redialling',
        );
        this.drop();
      }, o.connectTimeoutMs);
      this.#metadataWait.unref();
    }
  }

  protected received(data: Buffer, isBinary: boolean): void {
    if (isBinary)
      throw new BridgeError('unknown_event', 'an ElevenLabs agent sends JSON text events, not binary');
    let ev: ServerEvent;
    try {
      ev = JSON.parse(data.toString('utf8')) as ServerEvent;
    } catch {
      throw new BridgeError('bad_json', 'an event from the ElevenLabs agent is not JSON');
    }
    if (ev === null || typeof ev !== 'object' || typeof ev.type !== 'string')
      throw new BridgeError('unknown_event', 'an event from the ElevenLabs agent has no type');
    switch (ev.type) {
      case 'audio':
        this.#audio(field(ev, 'audio_event') as Partial<EL.AudioEvent>);
        return;
      case 'interruption':
        this.#interruption(field(ev, 'interruption_event') as Partial<EL.InterruptionEvent>);
        return;
      case 'ping':
        this.#ping(field(ev, 'ping_event') as Partial<EL.PingEvent>);
        return;
      case 'conversation_initiation_metadata':
        this.#metadata(
          field(
            ev,
            'conversation_initiation_metadata_event',
          ) as Partial<EL.ConversationInitiationMetadataEvent>,
        );
        return;
      case 'client_tool_call':
        this.#toolCall(field(ev, 'client_tool_call') as Partial<EL.ClientToolCall>);
        return;
      case 'agent_response_correction': {
        const c = ev.agent_response_correction_event as Partial<EL.AgentResponseCorrectionEvent> | undefined;
        this.log.debug({ event_id: c?.event_id }, "agent's reply corrected after an interruption");
        return;
      }
      case 'error': {
        const e = ev.error_event as Partial<EL.ErrorEvent> | undefined;
        this.log.warn(
          { bot: this.name, code: e?.code, error_type: e?.error_type, msg: e?.message },
          'agent error event',
        );
        return;
      }
      default:
        if (QUIET_EVENTS.has(ev.type)) return;
        this.#unknownEvent(ev.type);
    }
  }

  protected farewell(): void {
    if (this.#live) this.#flush();
  }

  protected override closedAsHangup(code: number, reason: string): boolean {
    this.#stopWaiting();
    const started = this.#live;
    this.#live = false;
    if (started) return code === 1000;
    // Closed before it named its formats: a refusal (a bad override, an agent not found), not an end.
    this.log.warn(
      { bot: this.name, code, reason: reason.slice(0, 200) },
      'agent closed the conversation before it started',
    );
    return false;
  }

  /** Agent notices (a message's status) have no place in a conversation: none is sent. */
  protected override notice(): string | undefined {
    return undefined;
  }

  protected override ended(): void {
    this.#stopWaiting();
    this.#pendingCalls.clear();
  }

  async #signedUrl(key: string, signal: AbortSignal): Promise<DialTarget> {
    const o = this.#o;
    if (o.apiBaseProblem !== undefined)
      throw new PreDialError(
        `may not call ${o.apiBaseProblem.shown} for a signed URL (api_base must be ${o.apiBaseProblem.accepts})`,
        { final: true },
      );
    const route = `${o.apiBase}${SIGNED_URL_PATH}?agent_id=${encodeURIComponent(o.agentId)}`;
    let answer: unknown;
    try {
      answer = await requestJson({ method: 'GET', url: route, headers: { 'xi-api-key': key }, signal });
    } catch (err) {
      if (!(err instanceof PreDialError)) throw err;
      const detail = err.detail([key]);
      if (detail !== undefined)
        this.log.warn({ bot: this.name, status: err.status, detail }, 'signed URL refused');
      // A wrong key, or an agent the key cannot reach, stays so on the next try.
      if (err.status !== undefined && [401, 403, 404, 422].includes(err.status))
        throw new PreDialError(err.message, { status: err.status, final: true });
      throw err;
    }
    const signed = (answer as { signed_url?: unknown } | null)?.signed_url;
    if (typeof signed !== 'string' || signed === '')
      throw new PreDialError(`GET ${shownValue(route)} answered without a signed_url`);
    return { url: signed };
  }

  #metadata(ev: Partial<EL.ConversationInitiationMetadataEvent>): void {
    const toBot = agentFormat(ev.user_input_audio_format);
    const fromBot = agentFormat(ev.agent_output_audio_format);
    if (toBot === undefined || fromBot === undefined) {
      this.#giveUp(
        `named audio formats this bridge does not speak (input ${shownValue(String(ev.user_input_audio_format))}, output ${shownValue(String(ev.agent_output_audio_format))}; it speaks pcm_8000 to pcm_48000 and ulaw_8000)`,
      );
      return;
    }
    const formats: BotFormats = { toBot, fromBot };
    const taken = this.#formats;
    if (taken !== undefined && !(sameFormat(taken.toBot, toBot) && sameFormat(taken.fromBot, fromBot))) {
      this.#giveUp(
        `named other audio formats on a redial (input ${ev.user_input_audio_format}, output ${ev.agent_output_audio_format}) than the call's legs were opened at`,
      );
      return;
    }
    this.#stopWaiting();
    this.confirmOpen();
    this.#batch = new Uint8Array(Math.round(CHUNK_MS * bytesPerMs(toBot)));
    this.#batched = 0;
    this.#live = true;
    this.#lastAudioId = -1;
    this.#cutBelow = 0;
    this.#cutAt = false;
    if (taken === undefined) {
      this.#formats = formats;
      // The held caller audio may come at once (an inline pipeline): #live is set first.
      if (this.port.formats?.(formats) !== true) {
        this.#live = false;
        this.#giveUp('named audio formats the call cannot take');
        return;
      }
    }
    this.log.info(
      {
        bot: this.name,
        conversation_id: ev.conversation_id,
        input: ev.user_input_audio_format,
        output: ev.agent_output_audio_format,
      },
      'agent conversation started',
    );
  }

  #audio(ev: Partial<EL.AudioEvent>): void {
    const id = ev.event_id;
    if (typeof ev.audio_base_64 !== 'string' || typeof id !== 'number')
      throw new BridgeError('invalid_field', 'audio needs audio_event.audio_base_64 and a numeric event_id', {
        field: 'audio_event',
      });
    if (!this.#live) return; // audio before the formats: nothing can take it
    const seen = this.#lastAudioId;
    if (id > seen) this.#lastAudioId = id;
    // The turn cut: ids below the interruption's, and its own id when that audio had come before it.
    if (id < this.#cutBelow || (id === this.#cutBelow && this.#cutAt)) return;
    let audio: Uint8Array;
    try {
      audio = fromBase64(ev.audio_base_64);
    } catch {
      throw new BridgeError('bad_base64', 'audio_event.audio_base_64 is not base64');
    }
    if (this.#formats!.fromBot.codec === 'slin' && (audio.length & 1) !== 0)
      throw new BridgeError('odd_length', `PCM16 audio must be an even byte count, got ${audio.length}`);
    if (audio.length > 0) this.port.audio(audio);
  }

  #interruption(ev: Partial<EL.InterruptionEvent>): void {
    const id = ev.event_id;
    if (typeof id !== 'number')
      throw new BridgeError('invalid_field', 'interruption needs a numeric interruption_event.event_id', {
        field: 'interruption_event',
      });
    if (id < this.#cutBelow) return; // an older one, late: the newer one stands
    this.port.clear();
    // Audio at this id already here is the turn being cut; audio at it still to come is the reply.
    this.#cutAt = this.#lastAudioId >= id;
    this.#cutBelow = id;
    this.log.debug({ event_id: id, cut_at: this.#cutAt }, 'agent interrupted');
  }

  #ping(ev: Partial<EL.PingEvent>): void {
    if (typeof ev.event_id !== 'number')
      throw new BridgeError('invalid_field', 'ping needs a numeric ping_event.event_id', {
        field: 'ping_event',
      });
    this.#send({ type: 'pong', event_id: ev.event_id } satisfies EL.Pong);
  }

  /**
   * The agent calls one of its client tools: the call's tool of that name runs, and its output goes back
   * as the result, flagged an error when it is one.
   */
  #toolCall(ev: Partial<EL.ClientToolCall>): void {
    const id = ev.tool_call_id;
    if (typeof id !== 'string')
      throw new BridgeError('invalid_field', 'client_tool_call needs a tool_call_id string', {
        field: 'client_tool_call',
      });
    const name = typeof ev.tool_name === 'string' ? ev.tool_name : '';
    const tools = this.#o.tools;
    if (tools === undefined) {
      this.log.warn({ tool: name.slice(0, 64) }, 'agent called a client tool; this call has no tools');
      this.#result(id, {
        error: 'not_found',
        message: `no tool "${name.slice(0, 64)}" on this call: it has no tools`,
      });
      return;
    }
    if (this.#pendingCalls.has(id)) return;
    this.#pendingCalls.add(id);
    // ElevenLabs' agent decides itself whether it waits for the result and speaks after it.
    tools.call({ callId: id, name, arguments: ev.parameters ?? {} }, (output) => {
      if (this.#pendingCalls.delete(id)) this.#result(id, output);
    });
  }

  #result(id: string, output: ToolOutput): void {
    this.#send({
      type: 'client_tool_result',
      tool_call_id: id,
      result: JSON.stringify(output),
      is_error: typeof output.error === 'string',
    } satisfies EL.ClientToolResult);
  }

  #unknownEvent(type: string): void {
    this.o.metrics.badFrames.labels('unknown_event').inc();
    if (this.#unknown.has(type) || this.#unknown.size >= 32) return;
    this.#unknown.add(type);
    this.log.warn({ bot: this.name, type: type.slice(0, 64) }, 'unknown agent event skipped');
  }

  /** The call cannot go on with this agent: the provider is told, the socket closed; the call goes on. */
  #giveUp(what: string): void {
    this.log.error({ bot: this.name }, `agent ${what}`);
    this.port.failed(
      new BridgeError('bot_unavailable', `bot ${this.name} ${what}; the call continues without a bot`),
    );
    this.end('bot_unavailable');
  }

  #stopWaiting(): void {
    if (this.#metadataWait !== undefined) this.o.clock?.clearTimeout(this.#metadataWait);
    this.#metadataWait = undefined;
  }

  #flush(): void {
    if (this.#batched === 0) return;
    this.#send({ user_audio_chunk: toBase64(this.#batch.subarray(0, this.#batched)) } satisfies EL.UserAudio);
    this.#batched = 0;
  }

  #send(message: object): void {
    this.sendText(JSON.stringify(message));
  }
}

function field(ev: ServerEvent, name: string): Record<string, unknown> {
  const v = ev[name];
  if (typeof v !== 'object' || v === null)
    throw new BridgeError('invalid_field', `${String(ev.type)} needs an object ${name}`, { field: name });
  return v as Record<string, unknown>;
}

function bytesPerMs(f: Format): number {
  return (f.rate / 1000) * (f.codec === 'slin' ? 2 : 1);
}

/** `url` with `agent_id` in its query (replacing one there). */
export function conversationUrl(url: string, agentId: string): string {
  try {
    const u = new URL(url);
    u.searchParams.set('agent_id', agentId);
    return u.toString();
  } catch {
    return url;
  }
}

/** The `elevenlabs-agent` dialect (src/dialects/bot/elevenlabs-agent.ts): a client of an Agents conversation. */
export const elevenlabsAgentBot: BotDialect = {
  decl: elevenlabsAgent,
  formatsFromBot: true,
  format: () => DEFAULT_FORMAT,
  create: (call, port, { link, settings, own, deps, tools }) => {
    const apiBase = settings.apiBase ?? ELEVENLABS_API_BASE;
    // A tenant's own api_base was checked with its bot; the default one is checked here, where it is used.
    const apiBaseProblem =
      own && settings.apiKey !== undefined && settings.apiBase === undefined
        ? tenantDialledProblem(apiBase, deps.ctx.config)
        : undefined;
    return new ElevenLabsAgentBot(call, port, {
      ...link,
      url: conversationUrl(link.url, settings.agentId ?? ''),
      agentId: settings.agentId ?? '',
      apiKey: settings.apiKey,
      apiBase,
      apiBaseProblem,
      instructions: settings.instructions,
      voice: settings.voice,
      dtmf: settings.dtmf,
      tools,
    });
  },
};
