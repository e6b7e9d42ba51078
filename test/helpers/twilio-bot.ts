/**
 * A bot that speaks Twilio Media Streams as a server (the bridge's `twilio` bot dialect dials it): it
 * waits for `start` and keeps the caller's µ-law audio. It echoes each `media` payload straight back on
 * the stream, as a voice app written for Twilio would answer with its own `media` events; or, given a
 * `reply`, answers `start` with all of it at once in 20 ms `media` events (a bot whose speech is ready
 * ahead, as a TTS streams it), and echoes nothing.
 */
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';

export class TwilioBot {
  readonly #wss: WebSocketServer;
  /** The caller's audio as it reached the bot, µ-law bytes, per stream in order of connection. */
  readonly streams: { streamSid: string; ulaw: Buffer[] }[] = [];

  private constructor(wss: WebSocketServer, reply: Int16Array | undefined) {
    this.#wss = wss;
    const replyUlaw = reply === undefined ? undefined : Buffer.alloc(reply.length);
    if (replyUlaw !== undefined) encodeInto('pcmu', reply!, replyUlaw);
    wss.on('connection', (ws) => {
      let stream: { streamSid: string; ulaw: Buffer[] } | undefined;
      ws.on('message', (data: Buffer) => {
        const ev = JSON.parse(data.toString('utf8')) as {
          event: string;
          start?: { streamSid: string };
          media?: { payload: string };
        };
        if (ev.event === 'start' && ev.start !== undefined) {
          stream = { streamSid: ev.start.streamSid, ulaw: [] };
          this.streams.push(stream);
          for (let at = 0; replyUlaw !== undefined && at < replyUlaw.length; at += 160)
            ws.send(
              JSON.stringify({
                event: 'media',
                streamSid: stream.streamSid,
                media: { payload: replyUlaw.subarray(at, at + 160).toString('base64') },
              }),
            );
        } else if (ev.event === 'media' && stream !== undefined && ev.media !== undefined) {
          stream.ulaw.push(Buffer.from(ev.media.payload, 'base64'));
          if (replyUlaw === undefined)
            ws.send(
              JSON.stringify({
                event: 'media',
                streamSid: stream.streamSid,
                media: { payload: ev.media.payload },
              }),
            );
        }
      });
      ws.on('error', () => {});
    });
  }

  /** `reply`: PCM16 at 8 kHz, sent whole when a stream starts, in place of the echo. */
  static async start(o: { reply?: Int16Array } = {}): Promise<TwilioBot> {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    return new TwilioBot(wss, o.reply);
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.#wss.address() as AddressInfo).port}/bot`;
  }

  /** What the bot heard on its `index`th stream, as PCM16 at 8 kHz. */
  heard(index = 0): Int16Array {
    const ulaw = Buffer.concat(this.streams[index]?.ulaw ?? []);
    const pcm = new Int16Array(ulaw.length);
    decodeInto('pcmu', ulaw, pcm);
    return pcm;
  }

  async close(): Promise<void> {
    for (const c of this.#wss.clients) c.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}
