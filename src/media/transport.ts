/**
 * The provider connection's transport: what a provider connection, its session and its outbound queue
 * need of the socket under a call. A `ws` WebSocket is one as it is (every dialect on `/v1/media...`);
 * AudioSocket's TCP connection is another (src/media/audiosocket-listener.ts), whose messages are its
 * type-length frames. The dialect's wire (src/media/providers/) reads and frames the messages, so the
 * session, the legs and the outbound queue are the same whatever carries them.
 *
 *   readyState       WebSocket's numbers: 0 connecting, 1 open, 2 closing, 3 closed
 *   bufferedAmount   bytes written and not yet handed to the kernel (backpressure)
 *   send             one message: text or binary (a TCP transport writes the bytes as they are)
 *   close / terminate   an orderly close (a WebSocket close code, where the transport has one), a cut
 *   ping / 'pong'    liveness: the heartbeat ends a peer that did not answer the previous ping
 *   'message'        one whole message, binary or text
 *   'close'          the transport closed: 1000 when the peer closed cleanly, another code when not
 */
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
