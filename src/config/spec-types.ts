/**
 * The shape of a row of the configuration table (src/config/spec.ts) and the helpers that write one.
 */

/** The sections of docs/configuration.md, in order. */
export const GROUPS = {
  server: 'Server',
  security: 'Authentication and secrets',
  provider: "The provider's voice API",
  bots: 'Bots',
  media: 'Media path',
  state: 'Shared state (several instances)',
  limits: 'Limits',
  messaging: 'Messaging',
  recordings: 'Recordings',
} as const;
export type Group = keyof typeof GROUPS;

/** What a default that is not one fixed value depends on. */
export interface DefaultContext {
  /** `os.availableParallelism()`: the CPUs this process may use. */
  readonly cpus: number;
  /** An integer variable with a fixed default, already read. */
  readonly valueOf: (name: string) => number;
  /** An enumeration's value as set (undefined when unset), for a default that follows it. */
  readonly choiceOf: (name: string) => string | undefined;
}

/** A default worked out at start-up; `rule` is how the document states it. */
export interface DerivedDefault {
  readonly rule: string;
  readonly value: (ctx: DefaultContext) => number;
}

interface VarBase {
  readonly name: string;
  readonly group: Group;
  /** What it does, in full: the document's list beneath each table. */
  readonly description: string;
}

/** A whole number from `min` to `max` (and, when `values` is given, one of them). */
export interface IntegerVar extends VarBase {
  readonly type: 'integer';
  /** The `Config` field it fills. */
  readonly field: string;
  readonly min: number;
  readonly max: number;
  readonly values?: readonly number[];
  readonly default: number | DerivedDefault;
}

/** One of a fixed list of words. */
export interface EnumVar extends VarBase {
  readonly type: 'enum';
  readonly field: string;
  readonly values: readonly string[];
  readonly default: string;
}

/** Anything else: read through the table, checked by its own rule in src/config.ts. */
export interface OtherVar extends VarBase {
  readonly type: 'text' | 'url' | 'secret' | 'list' | 'directory';
  /** What it accepts, in a few words (the table cell); the description holds the rest. */
  readonly accepts: string;
  /** The value used when it is unset or empty; undefined: unset. */
  readonly default?: string;
  /** How the document states a default that depends on other settings, when there is no fixed one. */
  readonly defaultRule?: string;
}

export type VarSpec = IntegerVar | EnumVar | OtherVar;

export const KIB = 1024;
export const MIB = 1024 * KIB;
export const HOUR_MS = 3_600_000;

export function int<const N extends string, const F extends string>(
  group: Group,
  name: N,
  field: F,
  range: { readonly min: number; readonly max: number; readonly values?: readonly number[] },
  dflt: number | DerivedDefault,
  description: string,
) {
  return {
    type: 'integer',
    group,
    name,
    field,
    ...range,
    default: dflt,
    description,
  } as const satisfies IntegerVar;
}

export function choice<const N extends string, const F extends string, const V extends readonly string[]>(
  group: Group,
  name: N,
  field: F,
  values: V,
  dflt: V[number],
  description: string,
) {
  return { type: 'enum', group, name, field, values, default: dflt, description } as const satisfies EnumVar;
}

export function other<const N extends string>(
  group: Group,
  name: N,
  type: OtherVar['type'],
  doc: { readonly accepts: string; readonly default?: string; readonly defaultRule?: string },
  description: string,
) {
  return { type, group, name, ...doc, description } as const satisfies OtherVar;
}
