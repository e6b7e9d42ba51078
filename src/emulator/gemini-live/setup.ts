/**
 * The Gemini Live `setup` message, checked as the server's JSON parser checks a protobuf message: field
 * names in lowerCamelCase or their snake_case originals, an unknown name or a value of the wrong type
 * closes the socket with 1007 and a message in Google's words ("Invalid JSON payload received. Unknown
 * name ..."). What the stand-in acts on is read out into a `LiveSetup`: the model, the response modality,
 * the voice, the system instruction's text, the declared functions, the activity detection, resumption
 * and transcription. Fields it accepts without acting on them (temperature, safety settings, ...) pass.
 */
import type { LiveClientSetup } from '@google/genai';

/** A close the server answers a bad client message with: the WebSocket close code and its reason. */
export class LiveCloseError extends Error {
  constructor(
    readonly code: 1007 | 1008 | 1011,
    message: string,
  ) {
    super(message);
  }
}

export interface LiveSetup {
  /** As sent, `models/<name>`. */
  readonly model: string;
  readonly modality: 'AUDIO' | 'TEXT';
  readonly voice: string | null;
  /** The system instruction's text parts, joined by newlines. */
  readonly instructions: string;
  /** Names of the declared functions (`tools[].functionDeclarations[].name`). */
  readonly functions: readonly string[];
  /** Automatic activity detection: off means the client sends activityStart / activityEnd. */
  readonly vadDisabled: boolean;
  readonly thresholdDbfs: number;
  /** Silence that ends a turn, when the setup names one; else the stand-in's default. */
  readonly silenceMs: number | null;
  readonly prefixPaddingMs: number;
  /** `activityHandling`: speech over the model interrupts it (the default) or not. */
  readonly interrupts: boolean;
  /** `sessionResumption`: null when absent (no handles are sent), else the handle to resume, if any. */
  readonly resumption: { readonly handle: string | null } | null;
  readonly inputTranscription: boolean;
  readonly outputTranscription: boolean;
  readonly compression: boolean;
}

/** The fields of `setup` (LiveClientSetup), each with the check of its value. */
const SETUP_FIELDS = [
  'model',
  'generationConfig',
  'systemInstruction',
  'tools',
  'realtimeInputConfig',
  'sessionResumption',
  'contextWindowCompression',
  'inputAudioTranscription',
  'outputAudioTranscription',
  'proactivity',
  'historyConfig',
  'explicitVadSignal',
  'avatarConfig',
  'safetySettings',
  'labels',
] as const satisfies readonly (keyof LiveClientSetup)[];

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** `system_instruction` -> `systemInstruction`: the JSON parser takes a field's proto name too. */
const camel = (k: string): string => k.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** The object's fields under their lowerCamelCase names; 1007 for a name not in `known`. */
export function fields(
  o: Record<string, unknown>,
  known: readonly string[],
  at: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    const name = camel(k);
    if (!known.includes(name))
      throw new LiveCloseError(
        1007,
        `Invalid JSON payload received. Unknown name "${k}"${at === '' ? '' : ` at '${at}'`}: Cannot find field.`,
      );
    out[name] = v;
  }
  return out;
}

function invalidValue(at: string, type: string, v: unknown): LiveCloseError {
  const shown = JSON.stringify(v) ?? String(v);
  return new LiveCloseError(
    1007,
    `Invalid value at '${at}' (${type}), ${shown.length > 60 ? `${shown.slice(0, 57)}...` : shown}`,
  );
}

function object(v: unknown, at: string, type: string): Record<string, unknown> {
  if (!isObject(v)) throw invalidValue(at, type, v);
  return v;
}

/** The text of a Content (`{role?, parts: [{text}]}`). */
export function contentText(v: unknown, at: string): string {
  const c = fields(object(v, at, 'Content'), ['role', 'parts'], at);
  if (c.parts === undefined) return '';
  if (!Array.isArray(c.parts)) throw invalidValue(`${at}.parts`, 'Part', c.parts);
  return c.parts
    .map((p, i) => {
      const part = object(p, `${at}.parts[${i}]`, 'Part');
      return typeof part.text === 'string' ? part.text : '';
    })
    .filter((t) => t !== '')
    .join('\n');
}

const SENSITIVITY_DBFS: Record<string, number> = {
  START_SENSITIVITY_UNSPECIFIED: -40,
  START_SENSITIVITY_HIGH: -45,
  START_SENSITIVITY_LOW: -35,
};

function bool(v: unknown, at: string): boolean {
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw invalidValue(at, 'TYPE_BOOL', v);
  return v;
}

function int(v: unknown, at: string): number | null {
  if (v === undefined) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw invalidValue(at, 'TYPE_INT32', v);
  return v;
}

function functionNames(tools: unknown): string[] {
  if (tools === undefined) return [];
  if (!Array.isArray(tools)) throw invalidValue('setup.tools', 'Tool', tools);
  const names: string[] = [];
  tools.forEach((t, i) => {
    const at = `setup.tools[${i}]`;
    const tool = object(t, at, 'Tool');
    const decls = tool.functionDeclarations ?? tool.function_declarations;
    if (decls === undefined) return;
    if (!Array.isArray(decls))
      throw invalidValue(`${at}.function_declarations`, 'FunctionDeclaration', decls);
    decls.forEach((d, j) => {
      const decl = object(d, `${at}.function_declarations[${j}]`, 'FunctionDeclaration');
      if (typeof decl.name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$/.test(decl.name))
        throw new LiveCloseError(
          1007,
          `* GenerateContentRequest.tools[${i}].function_declarations[${j}].name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 128.`,
        );
      names.push(decl.name);
    });
  });
  return names;
}

/** Reads a `setup` message; throws LiveCloseError (1007) naming the first bad field. */
export function parseSetup(raw: unknown): LiveSetup {
  const s = fields(object(raw, 'setup', 'BidiGenerateContentSetup'), SETUP_FIELDS, 'setup');
  if (typeof s.model !== 'string' || s.model === '')
    throw new LiveCloseError(1007, 'Request contains an invalid argument: setup.model is required.');
  if (!s.model.startsWith('models/'))
    throw new LiveCloseError(
      1008,
      `${s.model} is not found for API version v1beta, or is not supported for bidiGenerateContent. Call ListModels to see the list of available models and their supported methods.`,
    );
  const gen =
    s.generationConfig === undefined
      ? {}
      : object(s.generationConfig, 'setup.generation_config', 'GenerationConfig');
  const modalities = gen.responseModalities ?? gen.response_modalities ?? ['AUDIO'];
  if (
    !Array.isArray(modalities) ||
    modalities.length !== 1 ||
    (modalities[0] !== 'AUDIO' && modalities[0] !== 'TEXT')
  )
    throw invalidValue('setup.generation_config.response_modalities', 'Modality', modalities);
  let voice: string | null = null;
  const speech = gen.speechConfig ?? gen.speech_config;
  if (speech !== undefined) {
    const sc = object(speech, 'setup.generation_config.speech_config', 'SpeechConfig');
    const vc = sc.voiceConfig ?? sc.voice_config;
    const pvc = isObject(vc) ? (vc.prebuiltVoiceConfig ?? vc.prebuilt_voice_config) : undefined;
    const name = isObject(pvc) ? (pvc.voiceName ?? pvc.voice_name) : undefined;
    if (name !== undefined && typeof name !== 'string')
      throw invalidValue(
        'setup.generation_config.speech_config.voice_config.prebuilt_voice_config.voice_name',
        'TYPE_STRING',
        name,
      );
    voice = name ?? null;
  }
  const instructions =
    s.systemInstruction === undefined ? '' : contentText(s.systemInstruction, 'setup.system_instruction');

  const ric =
    s.realtimeInputConfig === undefined
      ? {}
      : fields(
          object(s.realtimeInputConfig, 'setup.realtime_input_config', 'RealtimeInputConfig'),
          [
            'automaticActivityDetection',
            'activityHandling',
            'turnCoverage',
            'interimTranscriptTimestampEnabled',
          ],
          'setup.realtime_input_config',
        );
  const aadAt = 'setup.realtime_input_config.automatic_activity_detection';
  const aad =
    ric.automaticActivityDetection === undefined
      ? {}
      : fields(
          object(ric.automaticActivityDetection, aadAt, 'AutomaticActivityDetection'),
          [
            'disabled',
            'startOfSpeechSensitivity',
            'endOfSpeechSensitivity',
            'prefixPaddingMs',
            'silenceDurationMs',
          ],
          aadAt,
        );
  const start = aad.startOfSpeechSensitivity ?? 'START_SENSITIVITY_UNSPECIFIED';
  if (typeof start !== 'string' || SENSITIVITY_DBFS[start] === undefined)
    throw invalidValue(`${aadAt}.start_of_speech_sensitivity`, 'StartSensitivity', start);
  const handling = ric.activityHandling ?? 'ACTIVITY_HANDLING_UNSPECIFIED';
  const HANDLING = ['ACTIVITY_HANDLING_UNSPECIFIED', 'START_OF_ACTIVITY_INTERRUPTS', 'NO_INTERRUPTION'];
  if (typeof handling !== 'string' || !HANDLING.includes(handling))
    throw invalidValue('setup.realtime_input_config.activity_handling', 'ActivityHandling', handling);

  let resumption: LiveSetup['resumption'] = null;
  if (s.sessionResumption !== undefined) {
    const r = fields(
      object(s.sessionResumption, 'setup.session_resumption', 'SessionResumptionConfig'),
      ['handle', 'transparent'],
      'setup.session_resumption',
    );
    if (r.handle !== undefined && typeof r.handle !== 'string')
      throw invalidValue('setup.session_resumption.handle', 'TYPE_STRING', r.handle);
    if (r.transparent !== undefined)
      throw new LiveCloseError(1007, 'transparent is only supported on Vertex AI, not on the Gemini API.');
    resumption = { handle: typeof r.handle === 'string' && r.handle !== '' ? r.handle : null };
  }
  for (const k of [
    'inputAudioTranscription',
    'outputAudioTranscription',
    'contextWindowCompression',
  ] as const)
    if (s[k] !== undefined) object(s[k], `setup.${k}`, 'message');

  return {
    model: s.model,
    modality: modalities[0],
    voice,
    instructions,
    functions: functionNames(s.tools),
    vadDisabled: bool(aad.disabled, `${aadAt}.disabled`),
    thresholdDbfs: SENSITIVITY_DBFS[start]!,
    silenceMs: int(aad.silenceDurationMs, `${aadAt}.silence_duration_ms`),
    prefixPaddingMs: int(aad.prefixPaddingMs, `${aadAt}.prefix_padding_ms`) ?? 0,
    interrupts: handling !== 'NO_INTERRUPTION',
    resumption,
    inputTranscription: s.inputAudioTranscription !== undefined,
    outputTranscription: s.outputAudioTranscription !== undefined,
    compression: s.contextWindowCompression !== undefined,
  };
}
