/**
 * What a bot dialect's stand-in gives the command line that starts it (src/cli/stand-in-cli.ts): its
 * port, its own flags and their usage, and how it starts; and what a tool that runs it from the list
 * needs (bench/bot-dialects.ts): the bot that points a bridge at it, and where its records are. Each
 * stand-in exports one beside its server; src/emulator/stand-ins.ts lists them.
 */
import type { Logger } from '../log.js';

/** Flags as `node:util` parseArgs takes them. */
export type StandInFlags = Readonly<
  Record<string, { readonly type: 'string' | 'boolean'; readonly default?: string | boolean }>
>;
export type StandInValues = Readonly<Record<string, string | boolean | undefined>>;

/** A numeric flag in [min, max], integer unless `decimal`; exits naming the flag when it is not. */
export type NumberFlag = (name: string, min: number, max: number, decimal?: boolean) => number;

/** The flags every stand-in takes, read for it. */
export interface StandInCommon {
  readonly port: number;
  readonly host: string;
  /** The one key accepted; undefined: any non-empty key. */
  readonly apiKey: string | undefined;
  /** Length of each reply, unless what the bot is told says otherwise. */
  readonly replyMs: number;
  readonly log: Logger;
}

/** The key a stand-in's bot object gives where its dialect takes one: one started without --api-key takes any. */
export const STAND_IN_KEY = 'stand-in-key-0001';

export interface StandIn {
  /** The port it listens on unless told. */
  readonly port: number;
  /** Its own flags, beside the common ones. */
  readonly flags: StandInFlags;
  /** Usage lines of its own flags. */
  readonly usage: string;
  /**
   * The `bot` object of a `PUT /v1/media-stream` body (REST field names, `dialect` among them) that
   * points a bridge at this stand-in listening at `base` (`http://host:port`), started without
   * `--api-key` (a key it needs is STAND_IN_KEY) and with its other flags at their defaults.
   */
  bot(base: string): Readonly<Record<string, unknown>>;
  /**
   * Its control API's list of sessions (GET, JSON `{sessions: [...]}`): each summary holds the caller's
   * audio it received (`input`: segments of `{rate, samples}`) and what it sent (`replies`, or
   * `responses` for the Realtime stand-in: each with `sent_ms`).
   */
  readonly sessionsPath: string;
  /** Starts it: what to print once it listens, and how to stop it. May exit through `num` on a bad flag. */
  start(
    values: StandInValues,
    common: StandInCommon,
    num: NumberFlag,
    fail: (message: string) => never,
  ): Promise<{ readonly lines: readonly string[]; close(): Promise<void> }>;
}
