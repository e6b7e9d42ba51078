/**
 * A replay of a Vocode phone conversation on Twilio Media Streams, the far end of the bridge's `twilio`
 * bot dialect: a WebSocket server that reads, sends and expects what vocode-core's TwilioPhoneConversation
 * and its TwilioOutputDevice do once their socket is open. Python cannot run here, so the rules are read
 * from Vocode's source and restated in our own code (none of theirs is copied):
 * github.com/vocodedev/vocode-core at commit e054c33a72787b6a4920f91eb8598ad0bafb4240,
 *
 *   vocode/streaming/telephony/conversation/twilio_phone_conversation.py  the socket: start, media, mark, stop
 *   vocode/streaming/output_device/twilio_output_device.py  media and mark per chunk, clear, marks matched
 *   vocode/streaming/streaming_conversation.py  send_speech_to_output: chunks sent, the last one waited on
 *   vocode/streaming/constants.py  TEXT_TO_SPEECH_CHUNK_SIZE_SECONDS = 0.1
 *
 * What it does:
 * - It reads text frames only (receive_text: a binary frame raises, and the conversation ends), skipping
 *   everything before `start`, whose `start.streamSid` it keeps.
 * - Then `media` is caller audio (µ-law 8 kHz, kept here for the test to measure), `mark` queues the
 *   mark's name as a finished chunk, and `stop` makes it close the socket normally (1000) and end.
 * - An utterance goes out in chunks of 0.1 s (800 bytes of µ-law) as fast as they are made, not paced:
 *   each `media` followed at once by a `mark` named with the chunk's id (a UUID).
 * - Each mark that comes back is matched with the oldest chunk not yet accounted for, whatever its name
 *   (a name that differs is logged as out of order): that chunk has played, or, if an interruption came
 *   first, was interrupted. An utterance is over only when its last chunk is accounted for; the
 *   conversation waits on that before it goes on.
 * - When the caller speaks over an utterance (here SpeechOnset, level only, standing in for its
 *   transcriber), every chunk not yet played is marked interrupted and `clear` is sent. The marks of
 *   those chunks must still come back, or the utterance never ends and the next one's marks are matched
 *   with the wrong chunks.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { type WebSocket, WebSocketServer } from 'ws';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { SpeechOnset } from './speech-onset.js';

const CHUNK_BYTES = 800;
/** How long the caller speaks before the stand-in transcriber has words for it. */
const SPEECH_MS = 200;

interface Chunk {
  readonly id: string;
  readonly bytes: number;
  readonly sentAt: number;
  interrupted: boolean;
  /** When its mark came back, and what became of it then. */
  done: { at: number; state: 'played' | 'interrupted'; name: string } | undefined;
}

export interface Utterance {
  readonly chunks: readonly Chunk[];
  readonly sentAt: number;
  /** Resolves when the last chunk is accounted for: the moment the conversation would go on. */
  readonly finished: Promise<{ at: number; cutOff: boolean }>;
}

export class VocodeCall {
  readonly ws: WebSocket;
  /** Every frame from the bridge, in order: its event (or "binary"), and when it arrived. */
  readonly received: { at: number; event: string }[] = [];
  streamSid: string | undefined;
  /** Why the conversation ended with an error, if it did. */
  failure: string | undefined;
  readonly heard: Buffer[] = [];
  /** Mark names that came back for a chunk other than the one expected (logged by Vocode). */
  readonly outOfOrder: string[] = [];
  /** Marks that came back with no chunk left to account for. */
  readonly extraMarks: string[] = [];
  readonly clears: number[] = [];
  readonly onsets: number[] = [];
  stoppedAt: number | undefined;
  closed: { code: number; at: number } | undefined;

  /** Chunks sent whose marks have not come back, oldest first. */
  readonly #unaccounted: Chunk[] = [];
  #current: { last: Chunk; resolve: (v: { at: number; cutOff: boolean }) => void } | undefined;
  readonly #onset = new SpeechOnset(SPEECH_MS);

  constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      const at = performance.now();
      if (isBinary) {
        this.received.push({ at, event: 'binary' });
        this.#fail('a binary frame where receive_text reads text');
        return;
      }
      let m: {
        event?: unknown;
        start?: { streamSid?: unknown };
        media?: { payload?: unknown };
        mark?: { name?: unknown };
      };
      try {
        m = JSON.parse(data.toString('utf8'));
      } catch {
        this.#fail('a frame that is not JSON');
        return;
      }
      this.received.push({ at, event: String(m.event) });
      if (this.streamSid === undefined) {
        if (m.event === 'start') this.streamSid = String(m.start?.streamSid);
        return;
      }
      if (m.event === 'media' && typeof m.media?.payload === 'string') {
        const ulaw = Buffer.from(m.media.payload, 'base64');
        this.heard.push(ulaw);
        if (this.#onset.takeUlaw(ulaw)) this.#onCallerSpeech(at);
      } else if (m.event === 'mark') {
        this.#markReturned(String(m.mark?.name), at);
      } else if (m.event === 'stop') {
        this.stoppedAt = at;
        ws.close(1000);
      }
    });
    ws.on('close', (code: number) => {
      this.closed = { code, at: performance.now() };
    });
    ws.on('error', () => {});
  }

  /** Sends `pcm` (8 kHz) as one utterance: its chunks and their marks at once, as Vocode does. */
  speak(pcm: Int16Array): Utterance {
    const ulaw = Buffer.alloc(pcm.length);
    encodeInto('pcmu', pcm, ulaw);
    const chunks: Chunk[] = [];
    const sentAt = performance.now();
    for (let at = 0; at < ulaw.length; at += CHUNK_BYTES) {
      const data = ulaw.subarray(at, Math.min(at + CHUNK_BYTES, ulaw.length));
      const chunk: Chunk = {
        id: randomUUID(),
        bytes: data.length,
        sentAt: performance.now(),
        interrupted: false,
        done: undefined,
      };
      this.ws.send(
        JSON.stringify({
          event: 'media',
          streamSid: this.streamSid,
          media: { payload: data.toString('base64') },
        }),
      );
      this.ws.send(JSON.stringify({ event: 'mark', streamSid: this.streamSid, mark: { name: chunk.id } }));
      this.#unaccounted.push(chunk);
      chunks.push(chunk);
    }
    const finished = new Promise<{ at: number; cutOff: boolean }>((resolve) => {
      this.#current = { last: chunks[chunks.length - 1]!, resolve };
    });
    return { chunks, sentAt, finished };
  }

  heardPcm(): Int16Array {
    const ulaw = Buffer.concat(this.heard);
    const pcm = new Int16Array(ulaw.length);
    decodeInto('pcmu', ulaw, pcm);
    return pcm;
  }

  #markReturned(name: string, at: number): void {
    const chunk = this.#unaccounted.shift();
    if (chunk === undefined) {
      this.extraMarks.push(name);
      return;
    }
    if (name !== chunk.id) this.outOfOrder.push(name);
    chunk.done = { at, state: chunk.interrupted ? 'interrupted' : 'played', name };
    const cur = this.#current;
    if (cur !== undefined && chunk === cur.last) {
      this.#current = undefined;
      cur.resolve({ at, cutOff: cur.last.interrupted });
    }
  }

  /** Speech over an utterance still playing: the rest of it is interrupted, and `clear` sent. */
  #onCallerSpeech(at: number): void {
    this.onsets.push(at);
    if (this.#unaccounted.length === 0) return;
    for (const c of this.#unaccounted) c.interrupted = true;
    this.ws.send(JSON.stringify({ event: 'clear', streamSid: this.streamSid }));
    this.clears.push(performance.now());
  }

  #fail(why: string): void {
    this.failure ??= why;
    this.ws.close(1011);
  }
}

export class VocodeTwilioBot {
  readonly #wss: WebSocketServer;
  readonly calls: VocodeCall[] = [];

  private constructor(wss: WebSocketServer) {
    this.#wss = wss;
    wss.on('connection', (ws) => this.calls.push(new VocodeCall(ws)));
  }

  static async start(): Promise<VocodeTwilioBot> {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    return new VocodeTwilioBot(wss);
  }

  /** Vocode's route is /connect_call/{id}, the id of a call config its webhook saved. */
  get url(): string {
    return `ws://127.0.0.1:${(this.#wss.address() as AddressInfo).port}/connect_call/replay`;
  }

  async close(): Promise<void> {
    for (const c of this.#wss.clients) c.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}
