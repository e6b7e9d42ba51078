/**
 * JSON schemas shared by the control plane's routes: they validate requests, shape responses (fields a
 * response schema does not name are never serialised) and make up the OpenAPI document.
 */

export const ERROR_BODY = {
  type: 'object',
  description: 'Every error: a stable code and a message a person can act on',
  properties: {
    error: { type: 'string' },
    message: { type: 'string' },
  },
  required: ['error', 'message'],
} as const;

/** Response schemas of the listed error statuses. */
export function errorResponses(...statuses: number[]): Record<number, typeof ERROR_BODY> {
  const out: Record<number, typeof ERROR_BODY> = {};
  for (const s of statuses) out[s] = ERROR_BODY;
  return out;
}

/** The OpenAPI security requirement of bearer-token routes. */
export const BEARER = [{ bearerAuth: [] }];

/** A bare phone number as the provider takes it (it applies prefixes itself). */
export const BARE_NUMBER = {
  type: 'string',
  pattern: '^\\+?[0-9]{1,32}$',
  description: 'a bare phone number: digits only, optionally after a "+"',
} as const;

export const SESSION_ID_PARAMS = {
  type: 'object',
  properties: {
    id: {
      type: 'string',
      minLength: 1,
      maxLength: 128,
      description: 'a session id of 1 to 128 characters',
    },
  },
  required: ['id'],
} as const;
