/**
 * The provider connection's transport: what a provider connection, its session and its outbound writer
 * need of the socket under a call. A `ws` WebSocket is one as it is (every dialect on `/v1/media...`);
 * AudioSocket's TCP connection is another (src/media/audiosocket-listener.ts), whose messages are its
 * type-length frames. The dialect's wire (src/media/providers/) reads and frames the messages, so the
 * session, the legs and the outbound writer are the same whatever carries them.
 *
 *   readyState       WebSocket's numbers: 0 connecting, 1 open, 2 closing, 3 closed
 *   bufferedAmount   bytes written and not yet handed to the kernel (backpressure)
 *   send             one message: text or binary (a TCP transport writes the bytes as they are)
 *   close / terminate   an orderly close (a WebSocket close code, where the transport has one), a cut
 *   ping / 'pong'    liveness: the heartbeat ends a peer that did not answer the previous ping
 *   'message'        one whole message, binary or text
 *   'close'          the transport closed: 1000 when the peer closed cleanly, another code when not
 */
import type { Socket } from 'node:net';
import { WebSocket } from 'ws';

export interface ProviderSocket {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: Buffer | string): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
  ping(): void;
  on(event: 'message', listener: (data: Buffer, isBinary: boolean) => void): this;
  on(event: 'pong', listener: () => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  on(event: 'close', listener: (code: number) => void): this;
}

/** `readyState` values (WebSocket's). */
export const SOCKET_OPEN = 1;
export const SOCKET_CONNECTING = 0;

/**
 * Messages of one size and kind framed in place: a buffer per message with room for the transport's own
 * header before the payload, so a chunk leaves as one write of header and payload. `ws` frames each
 * message it sends with a header buffer of its own and writes the two through a corked socket (a
 * vectored write, an options object and a header allocation per message; for text, the string encoded
 * into a buffer of its own first); a server's frame of a known size and kind has a fixed header
 * (RFC 6455 §5.2: FIN and the opcode, the length, no mask), written once per buffer here. Measured in
 * bench/README.md ("Audio frames written whole").
 */
export interface FramedMessages {
  /** Bytes of header before each payload. */
  readonly headerBytes: number;
  /** A new buffer for one message, its header written; the payload goes at `headerBytes`. */
  frame(): Buffer;
  /** Sends a buffer from `frame()` with its payload filled in (nothing while the socket is not open). */
  send(frame: Buffer): void;
}

/** What a framed message holds: binary data, or text (the payload must then be UTF-8, as RFC 6455 says). */
export type MessageKind = 'binary' | 'text';

/**
 * In-place framing for `payloadBytes`-byte messages of `kind` on `ws`, or undefined where it cannot be
 * done safely (the caller then sends with `ws.send`): only a `ws` server-side socket with no extension
 * negotiated (nothing to compress or mask) and its TCP socket at hand. Every other message on that
 * socket still goes through `ws.send`, which writes at once (no compression, no blobs, no fragments
 * here), so the order of messages is the order of the calls. It reads two of `ws`'s own fields
 * (`_isServer`, `_socket`): `ws` is pinned to an exact version in package.json, and
 * test/media/framed-messages.test.ts reads what is written with a real `ws` client.
 */
export function framedMessages(
  ws: ProviderSocket,
  payloadBytes: number,
  kind: MessageKind,
): FramedMessages | undefined {
  if (!(ws instanceof WebSocket)) return undefined;
  const inner = ws as unknown as { _isServer?: boolean; _socket?: Socket };
  const socket = inner._socket;
  if (inner._isServer !== true || ws.extensions !== '' || socket === undefined) return undefined;
  if (typeof socket.write !== 'function' || !(payloadBytes > 0)) return undefined;
  return new WsFramedMessages(ws, socket, payloadBytes, kind === 'binary' ? 0x82 : 0x81);
}

/** One object per call (no closures): it is read for every chunk sent. */
class WsFramedMessages implements FramedMessages {
  readonly headerBytes: number;
  readonly #ws: WebSocket;
  readonly #socket: Socket;
  readonly #payloadBytes: number;
  /** The header's first byte: FIN and the opcode (0x82 binary, 0x81 text). */
  readonly #first: number;

  constructor(ws: WebSocket, socket: Socket, payloadBytes: number, first: number) {
    this.#ws = ws;
    this.#socket = socket;
    this.#payloadBytes = payloadBytes;
    this.#first = first;
    this.headerBytes = payloadBytes < 126 ? 2 : payloadBytes < 65_536 ? 4 : 10;
  }

  frame(): Buffer {
    const n = this.#payloadBytes;
    const buf = Buffer.allocUnsafeSlow(this.headerBytes + n);
    buf[0] = this.#first;
    if (this.headerBytes === 2) buf[1] = n;
    else if (this.headerBytes === 4) {
      buf[1] = 126;
      buf.writeUInt16BE(n, 2);
    } else {
      buf[1] = 127;
      buf.writeBigUInt64BE(BigInt(n), 2);
    }
    return buf;
  }

  send(frame: Buffer): void {
    if (this.#ws.readyState === SOCKET_OPEN) this.#socket.write(frame);
  }
}
