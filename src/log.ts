/**
 * The process logger. Secrets are redacted at every level; audio is never logged.
 */
import { type Logger, pino } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'authorization',
  'token',
  'secret',
  'media_secret',
  'password',
  '*.authorization',
  '*.token',
  '*.secret',
  '*.media_secret',
  '*.headers.authorization',
  'req.headers.authorization',
  'req.query.token',
  'headers.authorization',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { service: 'voicebridge' },
    },
    destination,
  );
}
