/** The one plain-object guard of the provider's clients and validators: parsed JSON, not an array. */
export type Obj = Record<string, unknown>;

export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

// Shape checks of provider answers: each answers why `o[k]` is not as expected (the path `at` before the
// key), or undefined when it is; `first` answers the first failure of several.

export const first = (...checks: (string | undefined)[]): string | undefined =>
  checks.find((c) => c !== undefined);
export const str = (o: Obj, k: string, at = ''): string | undefined =>
  typeof o[k] === 'string' ? undefined : `"${at}${k}" is not a string`;
export const int = (o: Obj, k: string, at = ''): string | undefined =>
  Number.isInteger(o[k]) ? undefined : `"${at}${k}" is not an integer`;
export const bool = (o: Obj, k: string): string | undefined =>
  typeof o[k] === 'boolean' ? undefined : `"${k}" is not a boolean`;
export const oneOf = (o: Obj, k: string, allowed: readonly string[], at = ''): string | undefined =>
  typeof o[k] === 'string' && allowed.includes(o[k] as string)
    ? undefined
    : `"${at}${k}" is not one of ${allowed.join(', ')}`;
/** The object under `k`, checked by `inner`. */
export const nested = (o: Obj, k: string, inner: (v: Obj) => string | undefined): string | undefined => {
  const v = o[k];
  return isObj(v) ? inner(v) : `"${k}" is not an object`;
};
