/**
 * Ultravox's create-call request as the stand-in checks it, and the Call object it answers with. The
 * stand-in serves the `serverWebSocket` medium only (the one a server joins over a WebSocket): its
 * `inputSampleRate` is required, `outputSampleRate` defaults to it, `clientBufferSizeMs` to 60.
 * `selectedTools` items with a `temporaryTool` carrying `client: {}` are the call's client tools.
 * Durations are strings of seconds (`"3600s"`), as the API writes them. A bad field is a 400 naming it.
 */
import { randomUUID } from 'node:crypto';

export interface ServerWebSocketMedium {
  readonly inputSampleRate: number;
  readonly outputSampleRate: number;
  readonly clientBufferSizeMs: number;
  /** Data messages switched off by name (`{"transcript": false}`); all on by default. */
  readonly dataMessages: Readonly<Record<string, boolean>>;
}

export interface CallSpec {
  readonly medium: ServerWebSocketMedium;
  readonly systemPrompt: string | undefined;
  readonly firstSpeaker: 'agent' | 'user';
  /** Names of the client tools (`temporaryTool.modelToolName` with `client`). */
  readonly clientTools: readonly string[];
  readonly maxDurationMs: number;
  readonly joinTimeoutMs: number;
  /** The request body as sent. */
  readonly body: Readonly<Record<string, unknown>>;
}

export class CallRequestError extends Error {}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function rate(v: unknown, field: string, dflt?: number): number {
  if (v === undefined && dflt !== undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 8000 || v > 48000)
    throw new CallRequestError(
      `${field} must be an integer sample rate from 8000 to 48000, got ${JSON.stringify(v)}`,
    );
  return v;
}

/** `"30s"` or `"1.5s"` to ms. */
export function durationMs(v: unknown, field: string, dflt: number): number {
  if (v === undefined) return dflt;
  const m = typeof v === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(v) : null;
  if (m === null)
    throw new CallRequestError(
      `${field} must be a duration in seconds such as "30s", got ${JSON.stringify(v)}`,
    );
  return Math.round(Number(m[1]) * 1000);
}

export function parseCallRequest(body: Record<string, unknown>): CallSpec {
  const medium = body.medium;
  if (!isObject(medium) || !isObject(medium.serverWebSocket))
    throw new CallRequestError(
      'medium.serverWebSocket is required: the stand-in serves WebSocket calls only',
    );
  const sws = medium.serverWebSocket;
  const inputSampleRate = rate(sws.inputSampleRate, 'medium.serverWebSocket.inputSampleRate');
  const outputSampleRate = rate(
    sws.outputSampleRate,
    'medium.serverWebSocket.outputSampleRate',
    inputSampleRate,
  );
  const buffer = sws.clientBufferSizeMs ?? 60;
  if (typeof buffer !== 'number' || !Number.isInteger(buffer) || buffer < 0 || buffer > 600_000)
    throw new CallRequestError(
      `medium.serverWebSocket.clientBufferSizeMs must be an integer from 0 to 600000, got ${JSON.stringify(buffer)}`,
    );
  const dataMessages = sws.dataMessages ?? {};
  if (!isObject(dataMessages) || Object.values(dataMessages).some((v) => typeof v !== 'boolean'))
    throw new CallRequestError('medium.serverWebSocket.dataMessages must map message names to booleans');
  if (body.systemPrompt !== undefined && typeof body.systemPrompt !== 'string')
    throw new CallRequestError('systemPrompt must be a string');
  const tools = body.selectedTools ?? [];
  if (!Array.isArray(tools)) throw new CallRequestError('selectedTools must be an array');
  const clientTools: string[] = [];
  tools.forEach((t, i) => {
    if (!isObject(t)) throw new CallRequestError(`selectedTools[${i}] must be an object`);
    const temp = t.temporaryTool;
    if (temp === undefined) return;
    if (!isObject(temp) || typeof temp.modelToolName !== 'string' || temp.modelToolName === '')
      throw new CallRequestError(
        `selectedTools[${i}].temporaryTool.modelToolName must be a non-empty string`,
      );
    if (temp.client !== undefined) clientTools.push(temp.modelToolName);
  });
  return {
    medium: {
      inputSampleRate,
      outputSampleRate,
      clientBufferSizeMs: buffer,
      dataMessages: dataMessages as Record<string, boolean>,
    },
    systemPrompt: body.systemPrompt as string | undefined,
    firstSpeaker: firstSpeakerOf(body),
    clientTools,
    maxDurationMs: durationMs(body.maxDuration, 'maxDuration', 3600_000),
    joinTimeoutMs: durationMs(body.joinTimeout, 'joinTimeout', 30_000),
    body,
  };
}

function firstSpeakerOf(body: Record<string, unknown>): 'agent' | 'user' {
  const settings = body.firstSpeakerSettings;
  if (settings !== undefined) {
    if (!isObject(settings) || (settings.agent === undefined) === (settings.user === undefined))
      throw new CallRequestError('firstSpeakerSettings must hold exactly one of agent and user');
    return settings.user !== undefined ? 'user' : 'agent';
  }
  if (body.firstSpeaker === undefined || body.firstSpeaker === 'FIRST_SPEAKER_AGENT') return 'agent';
  if (body.firstSpeaker === 'FIRST_SPEAKER_USER') return 'user';
  throw new CallRequestError(
    `firstSpeaker must be FIRST_SPEAKER_AGENT or FIRST_SPEAKER_USER, got ${JSON.stringify(body.firstSpeaker)}`,
  );
}

/** A call the stand-in created: its spec, and whether it was joined or has ended. */
export class CallEntry {
  readonly callId = randomUUID();
  readonly created = new Date().toISOString();
  readonly createdAt = performance.now();
  joined: string | null = null;
  ended: string | null = null;
  endReason: string | null = null;
  readonly joinUrl: string;

  constructor(
    readonly spec: CallSpec,
    joinUrlOf: (callId: string) => string,
  ) {
    this.joinUrl = joinUrlOf(this.callId);
  }

  /** The Call object as the API returns it (the fields the stand-in knows). */
  view(): Record<string, unknown> {
    const b = this.spec.body;
    return {
      callId: this.callId,
      created: this.created,
      joined: this.joined,
      ended: this.ended,
      endReason: this.endReason,
      firstSpeaker: this.spec.firstSpeaker === 'user' ? 'FIRST_SPEAKER_USER' : 'FIRST_SPEAKER_AGENT',
      firstSpeakerSettings: b.firstSpeakerSettings ?? { [this.spec.firstSpeaker]: {} },
      joinUrl: this.joinUrl,
      medium: { serverWebSocket: { ...this.spec.medium } },
      model: b.model ?? 'ultravox-v0.7',
      systemPrompt: this.spec.systemPrompt ?? '',
      voice: b.voice ?? null,
      selectedTools: b.selectedTools ?? [],
      maxDuration: `${this.spec.maxDurationMs / 1000}s`,
      joinTimeout: `${this.spec.joinTimeoutMs / 1000}s`,
      metadata: b.metadata ?? {},
    };
  }
}
