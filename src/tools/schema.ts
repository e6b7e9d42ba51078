/**
 * JSON Schema for tool arguments, on ajv (the validator fastify already uses for request bodies): a
 * tenant's `parameters` is compiled once when it is stored (a schema ajv cannot compile is a 400) and
 * again, from a bounded cache, when a call of the tool is checked.
 *
 * The rules the instance keeps, each for a reason:
 * - strict: a keyword ajv does not know is an error, so a misspelt `requried` is refused when stored
 *   rather than silently checking nothing;
 * - no `pattern` or `patternProperties`: a regular expression from a tenant would run on the thread
 *   that carries every call's audio, and a catastrophic one could stall them all (ajv removes them as
 *   keywords, so strict mode refuses them with its own traversal, never a property named "pattern");
 * - `format` is an annotation only (no formats are loaded): a model's strings are not held to it;
 * - schemas are never added to the instance by `$id` (two tenants may use the same one), and each
 *   compiled one leaves ajv's own cache when it leaves ours, so the memory held stays bounded.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

const ajv = new Ajv({
  strict: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  allErrors: false,
  validateFormats: false,
  addUsedSchema: false,
  logger: false,
});
ajv.removeKeyword('pattern');
ajv.removeKeyword('patternProperties');

/** The bridge's own schemas (the built-in tools'): every keyword, `pattern` included. */
const trusted = new Ajv({ strict: true, allErrors: false, validateFormats: false, logger: false });

/** A checker for one of the bridge's own schemas, compiled once by its caller. */
export function trustedChecker(schema: object): (args: unknown) => string | undefined {
  const validate = trusted.compile(schema);
  return (args) => (validate(args) ? undefined : describeErrors(validate.errors ?? []));
}

/** Compiled schemas kept, by their JSON text; the least recently used goes first. */
const CACHE_MAX = 256;
const cache = new Map<string, { schema: object; validate: ValidateFunction }>();

/** Why `schema` cannot check a tool's arguments (ajv's words), or undefined when it can. */
export function schemaProblem(schema: object): string | undefined {
  try {
    compiled(schema);
    return undefined;
  } catch (err) {
    return (err as Error).message.replace(/^strict mode: /, '');
  }
}

/** Checks `args` against `schema`: undefined when they fit, else what is wrong (never the values). */
export function argumentsProblem(schema: object, args: unknown): string | undefined {
  const validate = compiled(schema);
  if (validate(args)) return undefined;
  return describeErrors(validate.errors ?? []);
}

function compiled(schema: object): ValidateFunction {
  const key = JSON.stringify(schema);
  const hit = cache.get(key);
  if (hit !== undefined) {
    cache.delete(key);
    cache.set(key, hit);
    return hit.validate;
  }
  // A copy of its own, so ajv's cache (keyed by the object) holds what ours does and no caller's object.
  const own = JSON.parse(key) as object;
  const validate = ajv.compile(own);
  if (cache.size >= CACHE_MAX) {
    const [oldKey, old] = cache.entries().next().value!;
    cache.delete(oldKey);
    ajv.removeSchema(old.schema);
  }
  cache.set(key, { schema: own, validate });
  return validate;
}

/** ajv's errors as one line naming where each is (`arguments/number must be string`), no values. */
function describeErrors(errors: readonly ErrorObject[]): string {
  return errors
    .slice(0, 3)
    .map((e) => `arguments${e.instancePath} ${e.message ?? 'is not valid'}`)
    .join('; ');
}
