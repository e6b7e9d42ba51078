/**
 * A logger whose lines the test can read: the bridge's own pino logger (same redaction) writing to an
 * in-memory destination, each line parsed.
 */
import { createLogger, type Logger } from '../../src/log.js';

export interface CapturedLog {
  readonly log: Logger;
  readonly lines: Record<string, unknown>[];
  /** Lines whose message matches `msg` (and, when given, whose session_id is `sessionId`). */
  find(msg: RegExp, sessionId?: string): Record<string, unknown>[];
}

export function captureLog(level = 'info'): CapturedLog {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger(level, {
    write(chunk: string) {
      for (const l of chunk.split('\n')) if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
    },
  });
  return {
    log,
    lines,
    find: (msg, sessionId) =>
      lines.filter((l) => msg.test(String(l.msg)) && (sessionId === undefined || l.session_id === sessionId)),
  };
}
