/**
 * Uniform 400s for the control plane's route schemas: one message naming the bad field, what it
 * accepts and what it got ("input_sample_rate must be 8000 or 16000, got 11025").
 *
 * What a field accepts is written once, as the `description` of its property in the route schema,
 * so the OpenAPI document and the error message say the same thing.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BridgeError, describe, invalidField } from '../errors.js';

interface AjvError {
  readonly instancePath: string;
  readonly keyword: string;
  readonly params: Record<string, unknown>;
  readonly message?: string;
}

type PropSchemas = Record<string, { description?: string; writeOnly?: boolean }>;
type Part = 'body' | 'params' | 'querystring';

function partSchema(req: FastifyRequest, part: Part): { properties?: PropSchemas } | undefined {
  const schema = req.routeOptions.schema as Record<string, unknown> | undefined;
  return schema?.[part] as { properties?: PropSchemas } | undefined;
}

function partData(req: FastifyRequest, part: Part): unknown {
  if (part === 'body') return req.body;
  if (part === 'params') return req.params;
  return req.query;
}

/** The one 400 for the first schema violation of a request. */
export function validationError(req: FastifyRequest, errs: readonly AjvError[], part: Part): BridgeError {
  const e = errs[0];
  if (e === undefined) return new BridgeError('bad_request', `${part} is invalid`);
  const props = partSchema(req, part)?.properties ?? {};
  const data = partData(req, part) as Record<string, unknown> | undefined;
  let field = e.instancePath.split('/').filter((s) => s !== '')[0];
  if (field === undefined && e.keyword === 'required') field = String(e.params.missingProperty);
  if (field === undefined) {
    return new BridgeError(
      'bad_request',
      part === 'body'
        ? `the request body must be a JSON object, got ${describe(data)}`
        : `${part} ${e.message}`,
    );
  }
  const accepts = props[field]?.description ?? e.message ?? 'valid';
  // A write-only field (a secret) is never echoed back, not even when it is wrong.
  if (props[field]?.writeOnly === true) {
    return new BridgeError('invalid_field', `${field} must be ${accepts}`, { field });
  }
  const value = typeof data === 'object' && data !== null ? data[field] : undefined;
  return invalidField(field, accepts, value);
}

/**
 * Installs, in an encapsulated plugin scope, an error handler that turns schema violations into the
 * uniform 400 and leaves every other error to the application's handler.
 */
export function useUniformValidation(scope: FastifyInstance): void {
  scope.setErrorHandler((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    const v = (err as { validation?: readonly AjvError[]; validationContext?: string }).validation;
    if (v === undefined) throw err;
    const part = ((err as { validationContext?: string }).validationContext ?? 'body') as Part;
    const e = validationError(req, v, part);
    return reply.code(e.status).send(e.toBody());
  });
}

/**
 * A `preValidation` hook refusing fields the schema does not name. (The server's schema compiler
 * strips unknown fields silently; a misspelt optional field must not be ignored without a word.)
 */
export function rejectUnknownFields(known: readonly string[]) {
  const knownSet = new Set(known);
  return async (req: FastifyRequest): Promise<void> => {
    const body = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
    for (const key of Object.keys(body)) {
      if (!knownSet.has(key)) {
        throw new BridgeError(
          'invalid_field',
          `unknown field "${key}"; accepted fields: ${known.join(', ')}`,
          {
            field: key,
          },
        );
      }
    }
  };
}
