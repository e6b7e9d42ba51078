/**
 * The messaging APIs' error answers: `{"success": false, "error": "<message>"}` with the HTTP status,
 * and `error_data.code` when the messaging network refused the message (chat.md's codes).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isBridgeError } from '../../errors.js';
import type { ErrorBody as MessagingErrorBody } from './wire.js';

export class ApiError extends Error {
  readonly status: number;
  readonly networkCode: number | undefined;

  constructor(status: number, message: string, networkCode?: number) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.networkCode = networkCode;
  }

  toBody(): MessagingErrorBody {
    return {
      success: false,
      error: this.message,
      ...(this.networkCode !== undefined
        ? { error_data: { code: this.networkCode, message: this.message } }
        : {}),
    };
  }
}

export const badRequest = (message: string, networkCode?: number): ApiError =>
  new ApiError(400, message, networkCode);

/** The error handler of the messaging routes. */
export function messagingErrorHandler(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  if (err instanceof ApiError) {
    reply.code(err.status).send(err.toBody());
    return;
  }
  // The validators throw BridgeError with a message (and the field): a bad request.
  if (isBridgeError(err)) {
    reply.code(400).send({ success: false, error: err.message } satisfies MessagingErrorBody);
    return;
  }
  const status = err.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    reply.code(status).send({ success: false, error: err.message } satisfies MessagingErrorBody);
    return;
  }
  req.log.error({ err }, 'messaging emulator request failed');
  reply.code(500).send({ success: false, error: 'internal error' } satisfies MessagingErrorBody);
}

export function bodyOf(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('the request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}
