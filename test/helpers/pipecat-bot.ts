/**
 * A replay of a Pipecat bot on Twilio Media Streams, the far end of the bridge's `twilio` bot dialect:
 * a WebSocket server that reads, sends and expects what a Pipecat bot built with its runner and
 * TwilioFrameSerializer over the FastAPI WebSocket transport does. Python cannot run here, so the rules
 * are read from Pipecat's source and restated in our own code (none of theirs is copied):
 * github.com/pipecat-ai/pipecat at commit acead0507d7de44e216d24533964106ca1d1d044,
 *
 *   src/pipecat/runner/utils.py       parse_telephony_websocket, _detect_transport_type_from_message,
 *                                     and the serializer the runner builds for Twilio
 *   src/pipecat/serializers/twilio.py TwilioFrameSerializer: serialize and deserialize
 *   src/pipecat/transports/websocket/fastapi.py  the output's clock (_write_audio_sleep)
 *   src/pipecat/transports/base_output.py, base_transport.py  40 ms output chunks (audio_out_10ms_chunks 4)
 *   src/pipecat/audio/vad/vad_analyzer.py  VAD start after 0.2 s of speech (VAD_START_SECS)
 *
 * What it does, in that order:
 * - The runner reads the first two messages as text (Starlette's iter_text: a binary one raises, and the
 *   bot fails) and parses each as JSON (text that is not JSON counts as an empty object). The first of
 *   the two that detects as Twilio (`event` "start" with `start.streamSid` and `start.callSid`) gives the
 *   stream id, call id and `start.customParameters`; neither detecting, the bot cannot start.
 * - The serializer, with auto_hang_up on (its default), refuses to be built without a call sid, an
 *   account sid and an auth token; the runner takes the last two from TWILIO_ACCOUNT_SID and
 *   TWILIO_AUTH_TOKEN (`env` here).
 * - In: `media` is µ-law 8 kHz caller audio (kept here for the test to measure), `dtmf` a digit;
 *   `connected`, `start`, `mark` and `stop` are ignored.
 * - Out: the bot's audio in 40 ms chunks, each `{"event":"media","streamSid","media":{"payload"}}` in
 *   µ-law 8 kHz, paced by the transport's clock: after each chunk it sleeps until the next send time,
 *   which is reset to now + 40 ms when it did not have to sleep and advanced by 40 ms when it did. The
 *   first two chunks of a reply so leave together, then one every 40 ms.
 * - When the caller starts speaking (here SpeechOnset, level only, standing in for Silero), an
 *   interruption: the audio not yet sent is dropped, `{"event":"clear","streamSid"}` sent, the clock reset.
 * - It never sends `mark`, and so waits on nothing.
 * - Its hang-up is the serializer's POST to Twilio's REST API (or `base_url`), then a normal close of the
 *   socket; only the close is replayed (`hangUp`).
 */
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { type WebSocket, WebSocketServer } from 'ws';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { SpeechOnset } from './speech-onset.js';

/** Output chunk: 4 × 10 ms, as µ-law 8 kHz bytes once serialized. */
const CHUNK_MS = 40;
const CHUNK_BYTES = 8 * CHUNK_MS;
/** VAD_START_SECS. */
const VAD_START_MS = 200;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The runner's auto-detection of one handshake message, in the order it tries the providers. */
export function detectTransport(m: Obj): 'twilio' | 'telnyx' | 'plivo' | 'exotel' | 'unknown' {
  const start = isObj(m.start) ? m.start : undefined;
  const has = (k: string) => start !== undefined && k in start;
  if (m.event === 'start' && has('streamSid') && has('callSid')) return 'twilio';
  if ('stream_id' in m && has('call_control_id')) return 'telnyx';
  if (has('streamId') && has('callId')) return 'plivo';
  if (m.event === 'start' && has('stream_sid') && has('call_sid') && has('account_sid')) return 'exotel';
  return 'unknown';
}

export interface PipecatHandshake {
  readonly transport: ReturnType<typeof detectTransport>;
  /** Which of the two messages it was detected from. */
  readonly from: 'first' | 'second' | undefined;
  readonly streamId: unknown;
  readonly callId: unknown;
  /** `start.customParameters`: the runner's call_data.body. */
  readonly body: unknown;
}

/** One call: one socket from the bridge. */
export class PipecatCall {
  readonly ws: WebSocket;
  /** Every frame the bridge sent, in order: its event (or "binary"), and when it arrived. */
  readonly received: { at: number; event: string }[] = [];
  handshake: PipecatHandshake | undefined;
  /** Why the bot could not start (the runner or the serializer raised), if it did not. */
  failure: string | undefined;
  /** The caller's audio, µ-law 8 kHz, in order. */
  readonly heard: Buffer[] = [];
  readonly digits: string[] = [];
  /** What it sent: each media chunk's bytes, each clear, with the time it went. */
  readonly sent: { at: number; event: 'media' | 'clear'; bytes: number }[] = [];
  /** Times the caller's speech was noticed (each an interruption). */
  readonly onsets: number[] = [];
  closed: { code: number; at: number } | undefined;

  #streamSid = '';
  #handshakeFrames: Obj[] = [];
  #ready = false;
  readonly #queue: Buffer[] = [];
  #nextSendAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #pumping = false;
  readonly #onset = new SpeechOnset(VAD_START_MS);

  constructor(ws: WebSocket, env: Readonly<Record<string, string>>) {
    this.ws = ws;
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      const at = performance.now();
      if (isBinary) {
        this.received.push({ at, event: 'binary' });
        // iter_text cannot read a binary frame: the handshake raises and the bot never starts.
        if (!this.#ready) this.#fail('a binary frame where the runner reads text');
        return;
      }
      const text = data.toString('utf8');
      let msg: unknown;
      try {
        msg = JSON.parse(text);
      } catch {
        msg = undefined;
      }
      this.received.push({ at, event: isObj(msg) && typeof msg.event === 'string' ? msg.event : '?' });
      if (!this.#ready) this.#handshakeMessage(msg, text, env);
      else if (isObj(msg)) this.#deserialize(msg);
    });
    ws.on('close', (code: number) => {
      this.closed = { code, at: performance.now() };
      this.#stop();
    });
    ws.on('error', () => {});
  }

  /** Queues `pcm` (8 kHz) as the bot's reply, sent in 40 ms chunks on the transport's clock. */
  speak(pcm: Int16Array): void {
    const ulaw = Buffer.alloc(pcm.length);
    encodeInto('pcmu', pcm, ulaw);
    for (let at = 0; at < ulaw.length; at += CHUNK_BYTES) {
      const chunk = Buffer.alloc(CHUNK_BYTES, 0xff); // a short last chunk is padded with silence
      ulaw.copy(chunk, 0, at, Math.min(at + CHUNK_BYTES, ulaw.length));
      this.#queue.push(chunk);
    }
    if (!this.#pumping) this.#pump();
  }

  /** The caller's audio as PCM16 8 kHz. */
  heardPcm(): Int16Array {
    const ulaw = Buffer.concat(this.heard);
    const pcm = new Int16Array(ulaw.length);
    decodeInto('pcmu', ulaw, pcm);
    return pcm;
  }

  /** Ends the call as the bot: a normal close (after the serializer's REST hang-up, not replayed). */
  hangUp(): void {
    this.#stop();
    this.ws.close(1000);
  }

  #handshakeMessage(msg: unknown, text: string, env: Readonly<Record<string, string>>): void {
    // Text that is not JSON (or empty) reads as an empty object; other JSON that is no object raises.
    const m: unknown = text === '' || msg === undefined ? {} : msg;
    if (!isObj(m)) {
      this.#fail(`a handshake message that is not a JSON object: ${text.slice(0, 80)}`);
      return;
    }
    this.#handshakeFrames.push(m);
    if (this.#handshakeFrames.length < 2) return;
    const [first, second] = this.#handshakeFrames as [Obj, Obj];
    const a = detectTransport(first);
    const b = detectTransport(second);
    const from = a !== 'unknown' ? 'first' : b !== 'unknown' ? 'second' : undefined;
    const raw = from === 'first' ? first : second;
    const start = isObj(raw.start) ? raw.start : {};
    this.handshake = {
      transport: from === 'first' ? a : b,
      from,
      streamId: start.streamSid,
      callId: start.callSid,
      body: start.customParameters ?? {},
    };
    if (this.handshake.transport !== 'twilio') {
      this.#fail(`transport detected: ${this.handshake.transport}`);
      return;
    }
    const missing = [
      ...(typeof start.callSid === 'string' && start.callSid !== '' ? [] : ['call_sid']),
      ...(env.TWILIO_ACCOUNT_SID ? [] : ['account_sid']),
      ...(env.TWILIO_AUTH_TOKEN ? [] : ['auth_token']),
    ];
    if (missing.length > 0) {
      this.#fail(`auto_hang_up is enabled but missing required parameters: ${missing.join(', ')}`);
      return;
    }
    this.#streamSid = String(start.streamSid);
    this.#ready = true;
  }

  /** TwilioFrameSerializer.deserialize: media and dtmf; anything else is no frame. */
  #deserialize(m: Obj): void {
    if (m.event === 'media' && isObj(m.media) && typeof m.media.payload === 'string') {
      const ulaw = Buffer.from(m.media.payload, 'base64');
      this.heard.push(ulaw);
      if (this.#onset.takeUlaw(ulaw)) this.#interrupt();
    } else if (m.event === 'dtmf' && isObj(m.dtmf) && typeof m.dtmf.digit === 'string') {
      this.digits.push(m.dtmf.digit);
    }
  }

  /** One chunk out, then the transport's sleep until the next send time. */
  #pump(): void {
    const chunk = this.#queue.shift();
    if (chunk === undefined || this.ws.readyState !== this.ws.OPEN) {
      this.#pumping = false;
      return;
    }
    this.#pumping = true;
    this.ws.send(
      JSON.stringify({
        event: 'media',
        streamSid: this.#streamSid,
        media: { payload: chunk.toString('base64') },
      }),
    );
    this.sent.push({ at: performance.now(), event: 'media', bytes: chunk.length });
    const sleep = Math.max(0, this.#nextSendAt - performance.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#nextSendAt = sleep === 0 ? performance.now() + CHUNK_MS : this.#nextSendAt + CHUNK_MS;
      this.#pump();
    }, sleep);
  }

  #interrupt(): void {
    this.onsets.push(performance.now());
    this.#stop();
    this.ws.send(JSON.stringify({ event: 'clear', streamSid: this.#streamSid }));
    this.sent.push({ at: performance.now(), event: 'clear', bytes: 0 });
  }

  #stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#queue.length = 0;
    this.#pumping = false;
    this.#nextSendAt = 0;
  }

  #fail(why: string): void {
    this.failure ??= why;
    // An exception in the bot's WebSocket route: the server closes the socket as an internal error.
    this.ws.close(1011);
  }
}

export class PipecatTwilioBot {
  readonly #wss: WebSocketServer;
  readonly calls: PipecatCall[] = [];

  private constructor(wss: WebSocketServer, env: Readonly<Record<string, string>>) {
    this.#wss = wss;
    wss.on('connection', (ws) => this.calls.push(new PipecatCall(ws, env)));
  }

  /** `env`: the runner's TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN (any non-empty values will do). */
  static async start(
    env: Readonly<Record<string, string>> = { TWILIO_ACCOUNT_SID: 'AC-any', TWILIO_AUTH_TOKEN: 'any' },
  ): Promise<PipecatTwilioBot> {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    return new PipecatTwilioBot(wss, env);
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.#wss.address() as AddressInfo).port}/ws`;
  }

  async close(): Promise<void> {
    for (const c of this.#wss.clients) c.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}
