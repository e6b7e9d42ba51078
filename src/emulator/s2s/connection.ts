/**
 * What the stand-in shell (host.ts) and the control API (control.ts) know of a connection: its record,
 * its frames, and the hooks tests drive. Each dialect's connection class implements it.
 */
import type { StandInRecord } from './record.js';

export const MALFORMED_KINDS = ['json', 'binary', 'unknown_event', 'no_type', 'oversized'] as const;
export type MalformedKind = (typeof MALFORMED_KINDS)[number];
/** Bytes of the `oversized` frame. */
export const OVERSIZED_BYTES = 16 * 1024 * 1024;

/** One client connection as the shell and the control API see it. */
export interface StandInConnection {
  readonly record: StandInRecord;
  onFrame(data: Buffer, isBinary: boolean): void;
  /** The socket closed (either side). */
  closed(code: number, reason: string): void;
  /** Closes the socket from the stand-in's side. */
  close(code: number, reason: string): void;
  sendMalformed(kind: MalformedKind): void;
  /** Speech starts now, as if the VAD had heard it (barge-in without audio). */
  speechStarted(): void;
  /**
   * Asks the client to run a tool, at once or (where the stand-in can) once a reply of `speakMs` it
   * speaks first is all sent; returns the call's id, or throws an Error saying why it cannot.
   */
  callTool(name: string, parameters: Record<string, unknown>, speakMs?: number): string;
  /**
   * A control hook of the dialect's own (`POST .../sessions/{id}/<name>`, e.g. Gemini's `go-away`): its
   * JSON answer, or undefined when the dialect has no such hook. A bad body throws HttpError(400); an
   * Error says why the session cannot do it now (409).
   */
  action?(name: string, body: Record<string, unknown>): Record<string, unknown> | undefined;
}
