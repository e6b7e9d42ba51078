/**
 * The session a connection starts with and `session.update` validated and merged into it as the GA
 * server does: `type: "realtime"` required, audio formats as objects under `session.audio` (`audio/pcm`
 * at 24 kHz only, `audio/pcmu`, `audio/pcma`), turn detection `server_vad` / `semantic_vad` / null with
 * the server's defaults filled in. A bad field throws a RealtimeRequestError naming it.
 */
import {
  type AudioFormat,
  invalidType,
  invalidValue,
  isObject,
  missingParameter,
  onlyKeys,
  outOfRange,
  type SessionConfig,
  type TurnDetection,
} from './events.js';

export const VOICES = [
  'alloy',
  'ash',
  'ballad',
  'coral',
  'echo',
  'sage',
  'shimmer',
  'verse',
  'marin',
  'cedar',
] as const;
const FORMAT_TYPES = ['audio/pcm', 'audio/pcmu', 'audio/pcma'] as const;
const SESSION_KEYS = [
  'type',
  'model',
  'instructions',
  'output_modalities',
  'audio',
  'tools',
  'tool_choice',
  'tracing',
  'truncation',
  'prompt',
  'include',
  'max_output_tokens',
  'parallel_tool_calls',
  'reasoning',
] as const;
/** Fields accepted and echoed back but without effect on the stand-in's replies. */
const PASSED_THROUGH = SESSION_KEYS.slice(5);

export const DEFAULT_INSTRUCTIONS = 'You are a helpful voice assistant.';

export const SERVER_VAD_DEFAULTS = {
  type: 'server_vad',
  threshold: 0.5,
  prefix_padding_ms: 300,
  silence_duration_ms: 500,
  idle_timeout_ms: null,
  create_response: true,
  interrupt_response: true,
} as const satisfies TurnDetection;

export const SEMANTIC_VAD_DEFAULTS = {
  type: 'semantic_vad',
  eagerness: 'auto',
  create_response: true,
  interrupt_response: true,
} as const satisfies TurnDetection;

/** The session `session.created` reports: 24 kHz PCM both ways, server VAD, voice `marin`. */
export function defaultSession(model: string): SessionConfig {
  return {
    type: 'realtime',
    model,
    output_modalities: ['audio'],
    instructions: DEFAULT_INSTRUCTIONS,
    audio: {
      input: {
        format: { type: 'audio/pcm', rate: 24000 },
        transcription: undefined,
        noise_reduction: undefined,
        turn_detection: { ...SERVER_VAD_DEFAULTS },
      },
      output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'marin', speed: 1 },
    },
    tools: [],
    tool_choice: 'auto',
    max_output_tokens: 'inf',
    tracing: null,
    truncation: 'auto',
    prompt: null,
  };
}

function parseFormat(v: unknown, param: string): AudioFormat {
  if (!isObject(v)) throw invalidType(param, 'an object', v);
  onlyKeys(v, ['type', 'rate'], param);
  const type = v.type ?? 'audio/pcm';
  if (!(FORMAT_TYPES as readonly unknown[]).includes(type))
    throw invalidValue(`${param}.type`, type, FORMAT_TYPES);
  if (type === 'audio/pcm') {
    if (v.rate !== undefined && v.rate !== 24000) throw invalidValue(`${param}.rate`, v.rate, ['24000']);
    return { type: 'audio/pcm', rate: 24000 };
  }
  if (v.rate !== undefined) throw invalidValue(`${param}.rate`, v.rate, []);
  return type === 'audio/pcmu' ? { type: 'audio/pcmu' } : { type: 'audio/pcma' };
}

function num(o: Record<string, unknown>, key: string, param: string, min: number, max: number): void {
  const v = o[key];
  if (v === undefined) return;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidType(`${param}.${key}`, 'a number', v);
  if (v < min || v > max) throw outOfRange(`${param}.${key}`, v, min, max);
}

function bool(o: Record<string, unknown>, key: string, param: string): void {
  if (o[key] !== undefined && typeof o[key] !== 'boolean')
    throw invalidType(`${param}.${key}`, 'a boolean', o[key]);
}

function parseTurnDetection(v: unknown, param: string): TurnDetection | null {
  if (v === null) return null;
  if (!isObject(v)) throw invalidType(param, 'an object', v);
  if (v.type === undefined) throw missingParameter(`${param}.type`);
  if (v.type === 'server_vad') {
    onlyKeys(v, Object.keys(SERVER_VAD_DEFAULTS), param);
    num(v, 'threshold', param, 0, 1);
    num(v, 'prefix_padding_ms', param, 0, 10_000);
    num(v, 'silence_duration_ms', param, 0, 10_000);
    if (v.idle_timeout_ms !== null) num(v, 'idle_timeout_ms', param, 5000, 30_000);
    bool(v, 'create_response', param);
    bool(v, 'interrupt_response', param);
    return { ...SERVER_VAD_DEFAULTS, ...(v as object) } as TurnDetection;
  }
  if (v.type === 'semantic_vad') {
    onlyKeys(v, Object.keys(SEMANTIC_VAD_DEFAULTS), param);
    const eagerness = ['low', 'medium', 'high', 'auto'];
    if (v.eagerness !== undefined && !eagerness.includes(v.eagerness as string))
      throw invalidValue(`${param}.eagerness`, v.eagerness, eagerness);
    bool(v, 'create_response', param);
    bool(v, 'interrupt_response', param);
    return { ...SEMANTIC_VAD_DEFAULTS, ...(v as object) } as TurnDetection;
  }
  throw invalidValue(`${param}.type`, v.type, ['server_vad', 'semantic_vad']);
}

function parseVoice(v: unknown, param: string): string | { id: string } {
  if (isObject(v) && typeof v.id === 'string') return { id: v.id };
  if (typeof v !== 'string') throw invalidType(param, 'a string', v);
  if (!(VOICES as readonly string[]).includes(v)) throw invalidValue(param, v, VOICES);
  return v;
}

type AudioIn = NonNullable<NonNullable<SessionConfig['audio']>['input']>;
type AudioOut = NonNullable<NonNullable<SessionConfig['audio']>['output']>;

function mergeInput(cur: AudioIn, v: unknown, param: string): AudioIn {
  if (!isObject(v)) throw invalidType(param, 'an object', v);
  onlyKeys(v, ['format', 'transcription', 'noise_reduction', 'turn_detection'], param);
  const next: AudioIn = { ...cur };
  if (v.format !== undefined) next.format = parseFormat(v.format, `${param}.format`);
  if (v.turn_detection !== undefined)
    next.turn_detection = parseTurnDetection(v.turn_detection, `${param}.turn_detection`);
  for (const k of ['transcription', 'noise_reduction'] as const) {
    if (v[k] === undefined) continue;
    if (v[k] !== null && !isObject(v[k])) throw invalidType(`${param}.${k}`, 'an object', v[k]);
    next[k] = (v[k] ?? undefined) as never;
  }
  return next;
}

function mergeOutput(cur: AudioOut, v: unknown, param: string): AudioOut {
  if (!isObject(v)) throw invalidType(param, 'an object', v);
  onlyKeys(v, ['format', 'voice', 'speed'], param);
  const next: AudioOut = { ...cur };
  if (v.format !== undefined) next.format = parseFormat(v.format, `${param}.format`);
  if (v.voice !== undefined) next.voice = parseVoice(v.voice, `${param}.voice`);
  if (v.speed !== undefined) {
    num(v, 'speed', param, 0.25, 1.5);
    next.speed = v.speed as number;
  }
  return next;
}

/** `current` with a `session.update`'s `session` merged in; throws at the first bad field. */
export function applySessionUpdate(current: SessionConfig, session: unknown): SessionConfig {
  if (session === undefined) throw missingParameter('session');
  if (!isObject(session)) throw invalidType('session', 'an object', session);
  onlyKeys(session, SESSION_KEYS, 'session');
  if (session.type === undefined) throw missingParameter('session.type');
  if (session.type !== 'realtime') throw invalidValue('session.type', session.type, ['realtime']);
  const next: SessionConfig = { ...current };
  if (session.model !== undefined) {
    if (typeof session.model !== 'string') throw invalidType('session.model', 'a string', session.model);
    next.model = session.model;
  }
  if (session.instructions !== undefined) {
    if (typeof session.instructions !== 'string')
      throw invalidType('session.instructions', 'a string', session.instructions);
    next.instructions = session.instructions;
  }
  if (session.output_modalities !== undefined) {
    const m = session.output_modalities;
    if (!Array.isArray(m)) throw invalidType('session.output_modalities', 'an array', m);
    if (m.length !== 1 || (m[0] !== 'audio' && m[0] !== 'text'))
      throw invalidValue('session.output_modalities', JSON.stringify(m), ['["audio"]', '["text"]']);
    next.output_modalities = [m[0]];
  }
  if (session.audio !== undefined) {
    const a = session.audio;
    if (!isObject(a)) throw invalidType('session.audio', 'an object', a);
    onlyKeys(a, ['input', 'output'], 'session.audio');
    const audio = { ...current.audio };
    if (a.input !== undefined) audio.input = mergeInput(audio.input ?? {}, a.input, 'session.audio.input');
    if (a.output !== undefined)
      audio.output = mergeOutput(audio.output ?? {}, a.output, 'session.audio.output');
    next.audio = audio;
  }
  for (const k of PASSED_THROUGH)
    if (session[k] !== undefined) (next as unknown as Record<string, unknown>)[k] = session[k];
  return next;
}
