/**
 * A Server-Sent Events client for tests: one real HTTP request, its stream parsed into events as they
 * come (`event:` and JSON `data:`), with comment lines counted.
 */
import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { waitFor } from './wait.js';

export interface SseEvent {
  readonly at: number;
  readonly event: string;
  readonly data: { readonly session_id: string; readonly [k: string]: unknown };
}

export class SseClient {
  readonly events: SseEvent[] = [];
  comments = 0;
  status = 0;
  body = '';
  contentType = '';
  ended = false;
  readonly #req: ClientRequest;
  #res: IncomingMessage | undefined;
  readonly answered: Promise<number>;
  #fail: (err: Error) => void = () => {};

  /** `auth`: a token sent as Bearer (`header`) or `?token=` (`query`). */
  constructor(url: string, token: string | undefined, how: 'header' | 'query' = 'header') {
    const u = new URL(url);
    if (token !== undefined && how === 'query') u.searchParams.set('token', token);
    let buf = '';
    let answer: (status: number) => void = () => {};
    this.answered = new Promise((resolve, reject) => {
      answer = resolve;
      this.#fail = reject;
    });
    this.answered.catch(() => {});
    this.#req = request(
      {
        host: u.hostname,
        port: u.port,
        path: `${u.pathname}${u.search}`,
        headers: {
          accept: 'text/event-stream',
          ...(token !== undefined && how === 'header' ? { authorization: `Bearer ${token}` } : {}),
        },
      },
      (res) => {
        this.#res = res;
        this.status = res.statusCode ?? 0;
        this.contentType = String(res.headers['content-type'] ?? '');
        answer(this.status);
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (this.status !== 200) {
            this.body += chunk;
            return;
          }
          buf += chunk;
          for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
            this.#message(buf.slice(0, i));
            buf = buf.slice(i + 2);
          }
        });
        res.on('end', () => {
          this.ended = true;
        });
        res.on('close', () => {
          this.ended = true;
        });
      },
    );
    this.#req.on('error', (err) => this.#fail(err));
    this.#req.end();
  }

  /** Stops reading (the socket's buffers fill and the server sees a slow client). */
  pause(): void {
    this.#res?.pause();
  }

  of(event: string, sessionId?: string): SseEvent[] {
    return this.events.filter(
      (e) => e.event === event && (sessionId === undefined || e.data.session_id === sessionId),
    );
  }

  async waitEvent(
    event: string,
    timeoutMs = 5_000,
    pred: (e: SseEvent) => boolean = () => true,
  ): Promise<SseEvent> {
    await waitFor(
      () => this.events.some((e) => e.event === event && pred(e)),
      timeoutMs,
      `SSE event ${event}`,
    );
    return this.events.find((e) => e.event === event && pred(e))!;
  }

  close(): void {
    this.#req.destroy();
  }

  #message(block: string): void {
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) this.comments++;
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length > 0)
      this.events.push({ at: performance.now(), event, data: JSON.parse(data.join('\n')) });
  }
}
