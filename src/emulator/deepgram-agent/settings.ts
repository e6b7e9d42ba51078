/**
 * Deepgram Voice Agent `Settings`, read as far as the stand-in acts on it: the audio formats both ways
 * (the encodings it can decode and encode: `linear16`, `mulaw`, `alaw`; `container: "none"`), the think
 * prompt and functions (each held to @deepgram/sdk's ThinkSettingsV1 function item: `name` a non-empty
 * string, `description` a string, `parameters` a JSON Schema object, `defer_until_eot` a boolean,
 * `endpoint` an object with a `url`; client-side when it has no `endpoint`), and the greeting. A field it cannot
 * take throws SettingsError naming it; other fields (listen and speak providers, tags, ...) pass.
 */
import type { agent } from '@deepgram/sdk';

export type Encoding = 'linear16' | 'mulaw' | 'alaw';
const ENCODINGS: readonly Encoding[] = ['linear16', 'mulaw', 'alaw'];

export interface AudioFormat {
  readonly encoding: Encoding;
  readonly sampleRate: number;
}

export interface AgentSettings {
  readonly input: AudioFormat;
  readonly output: AudioFormat;
  readonly prompt: string;
  /** Function names, and whether the client runs each (no `endpoint`). */
  readonly functions: ReadonlyMap<string, { readonly clientSide: boolean }>;
  readonly greeting: string | null;
}

/** Documented defaults when `audio` leaves a side out: 16 kHz linear16 in, 24 kHz linear16 out. */
export const DEFAULT_INPUT: AudioFormat = { encoding: 'linear16', sampleRate: 16000 };
export const DEFAULT_OUTPUT: AudioFormat = { encoding: 'linear16', sampleRate: 24000 };

export class SettingsError extends Error {}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function format(v: unknown, at: string, dflt: AudioFormat, output: boolean): AudioFormat {
  if (v === undefined) return dflt;
  if (!isObject(v)) throw new SettingsError(`${at} must be an object`);
  const encoding = v.encoding ?? dflt.encoding;
  if (!ENCODINGS.includes(encoding as Encoding))
    throw new SettingsError(
      `${at}.encoding must be one of ${ENCODINGS.join(', ')} on the stand-in, got ${JSON.stringify(encoding)}`,
    );
  const rate = v.sample_rate ?? dflt.sampleRate;
  if (typeof rate !== 'number' || !Number.isInteger(rate) || rate < 8000 || rate > 48000)
    throw new SettingsError(
      `${at}.sample_rate must be an integer from 8000 to 48000, got ${JSON.stringify(rate)}`,
    );
  if (output && v.container !== undefined && v.container !== 'none')
    throw new SettingsError(
      `${at}.container must be "none" on the stand-in, got ${JSON.stringify(v.container)}`,
    );
  return { encoding: encoding as Encoding, sampleRate: rate };
}

/** Reads a `Settings` message; throws SettingsError at the first field it cannot take. */
export function parseSettings(msg: Record<string, unknown>): AgentSettings {
  const s = msg as unknown as Partial<agent.AgentV1Settings>;
  const audio = s.audio === undefined ? {} : s.audio;
  if (!isObject(audio)) throw new SettingsError('audio must be an object');
  const a = s.agent;
  if (!isObject(a)) throw new SettingsError('agent is required and must be an object');
  const thinks = a.think === undefined ? [] : Array.isArray(a.think) ? a.think : [a.think];
  const think = thinks[0] as Record<string, unknown> | undefined;
  if (think !== undefined && !isObject(think)) throw new SettingsError('agent.think must be an object');
  const prompt = think?.prompt ?? '';
  if (typeof prompt !== 'string') throw new SettingsError('agent.think.prompt must be a string');
  const functions = new Map<string, { clientSide: boolean }>();
  const list = think?.functions ?? [];
  if (!Array.isArray(list)) throw new SettingsError('agent.think.functions must be an array');
  list.forEach((f: unknown, i) => {
    const at = `agent.think.functions[${i}]`;
    if (!isObject(f) || typeof f.name !== 'string' || f.name === '')
      throw new SettingsError(`${at}.name must be a non-empty string`);
    if (f.description !== undefined && typeof f.description !== 'string')
      throw new SettingsError(`${at}.description must be a string`);
    if (f.parameters !== undefined && (!isObject(f.parameters) || f.parameters.type !== 'object'))
      throw new SettingsError(`${at}.parameters must be a JSON Schema object with "type": "object"`);
    if (f.defer_until_eot !== undefined && typeof f.defer_until_eot !== 'boolean')
      throw new SettingsError(`${at}.defer_until_eot must be a boolean`);
    if (f.endpoint !== undefined && (!isObject(f.endpoint) || typeof f.endpoint.url !== 'string'))
      throw new SettingsError(`${at}.endpoint must be an object with a url string`);
    if (functions.has(f.name)) throw new SettingsError(`${at}.name ${f.name} is declared twice`);
    functions.set(f.name, { clientSide: f.endpoint === undefined });
  });
  const greeting = a.greeting ?? null;
  if (greeting !== null && typeof greeting !== 'string')
    throw new SettingsError('agent.greeting must be a string');
  return {
    input: format(audio.input, 'audio.input', DEFAULT_INPUT, false),
    output: format(audio.output, 'audio.output', DEFAULT_OUTPUT, true),
    prompt,
    functions,
    greeting: greeting === '' ? null : greeting,
  };
}
