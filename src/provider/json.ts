/** The one plain-object guard of the provider's clients and validators: parsed JSON, not an array. */
export type Obj = Record<string, unknown>;

export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
