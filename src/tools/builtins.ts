/**
 * The built-in tools (CONTRACT §10): what each is called, what the model is told of it, its arguments'
 * schema, and what it does for this call only, through the same code as the REST routes with the same
 * bounds:
 *
 *   end_call      the bot's audio already sent plays to the caller, then the provider dialect's hang-up
 *                 (call.ts places the mark and hangs up on its report)
 *   consult       control/call-control.ts's consult: the caller on hold, a second party dialled
 *   conference    control/call-control.ts's conference: a party added or removed
 *   send_dtmf     digits toward the provider behind the bot's audio, where the dialect carries digits
 *   send_message  messaging/send.ts's send to the caller's number: chat text or template, RCS template
 *
 * A refusal (the provider's 409, a closed chat window, a dialect without digits) is an `{error, message}`
 * output with the code of src/errors.ts, and the call goes on.
 */

import type { BridgeContext } from '../context.js';
import { conferenceCall, consultCall } from '../control/call-control.js';
import { BridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { CallerPort, ToolOutput, ToolSpec } from '../media/bot/types.js';
import { checkSendBody, type SendBody, sendToCaller } from '../messaging/send.js';
import type { ConferenceRequest } from '../provider/types.js';
import type { SessionInfo } from '../state/types.js';
import { trustedChecker } from './schema.js';
import type { BuiltinToolName } from './settings.js';

/** What a built-in acts on: this call. */
export interface BuiltinCall {
  readonly ctx: BridgeContext;
  readonly info: SessionInfo;
  /** The provider's dialect carries digits toward the provider. */
  readonly carriesDigits: boolean;
  /** The call's way to the caller (behind the bot's audio). */
  readonly port: CallerPort;
  readonly log: Logger;
  /** end_call: the bot's audio sent so far plays, then the call ends. */
  endCall(): void;
}

export interface Builtin {
  readonly spec: ToolSpec;
  /** Arguments' problem (never their values), or undefined. */
  readonly check: (args: unknown) => string | undefined;
  /** The longest the bridge waits for it before answering `upstream_timeout`. */
  readonly maxMs: number;
  /** False: its answer asks for no response (the call is ending). */
  readonly respond: boolean;
  run(args: Record<string, unknown>, call: BuiltinCall): Promise<ToolOutput>;
}

/** The provider's consult blocks up to its 20 s + 5 s: answered by 30 s at the latest (CONTRACT §10). */
export const CONSULT_MAX_MS = 30_000;
/** Conference and messaging answer within their clients' own bounds; this is a backstop past them. */
const CALL_MAX_MS = 30_000;

const NUMBER = {
  type: 'string',
  pattern: '^\\+?[0-9]{1,32}$',
  description: 'a phone number: digits only, optionally after a "+"',
} as const;

function builtin(
  name: BuiltinToolName,
  description: string,
  properties: Record<string, unknown>,
  required: readonly string[],
  more: Omit<Builtin, 'spec' | 'check'>,
): Builtin {
  const parameters = { type: 'object', properties, required, additionalProperties: false };
  return { spec: { name, description, parameters }, check: trustedChecker(parameters), ...more };
}

/** A refusal as the model's output: its code and message; anything else logged and answered `internal`. */
export function errorOutput(err: unknown, log: Logger, tool: string): ToolOutput {
  if (err instanceof BridgeError) return { error: err.code, message: err.message };
  log.error({ tool, err: (err as Error)?.message }, 'tool failed');
  return { error: 'internal', message: 'internal error' };
}

const invalid = (message: string) => new BridgeError('invalid_arguments', message);

export const BUILTINS: Readonly<Record<BuiltinToolName, Builtin>> = {
  end_call: builtin(
    'end_call',
    'Hang up the call. Say goodbye first: the caller hears everything you said before this, then the call ends.',
    { reason: { type: 'string', maxLength: 200, description: 'why the call ends (optional)' } },
    [],
    {
      maxMs: 1_000,
      respond: false,
      async run(_args, call) {
        call.endCall();
        return { ok: true };
      },
    },
  ),
  consult: builtin(
    'consult',
    'Put the caller on hold and call a colleague privately (a consult). Answers when the colleague picks up, does not answer, or the line fails.',
    { number: NUMBER, caller_id: { ...NUMBER, description: 'the number to show the colleague (optional)' } },
    ['number'],
    {
      maxMs: CONSULT_MAX_MS,
      respond: true,
      async run(args, call) {
        const body = {
          calledParty: args.number as string,
          ...(args.caller_id !== undefined && { callerId: args.caller_id as string }),
        };
        return { ...(await consultCall(call.ctx, call.info, body, call.log)) };
      },
    },
  ),
  conference: builtin(
    'conference',
    'Add a person to the call, or remove one; everyone on the call hears everyone.',
    {
      action: { type: 'string', enum: ['add', 'delete'], description: 'add or delete' },
      number: NUMBER,
      caller_id: { ...NUMBER, description: 'the number to show the person added (optional, add only)' },
    },
    ['action', 'number'],
    {
      maxMs: CALL_MAX_MS,
      respond: true,
      async run(args, call) {
        if (args.action === 'delete' && args.caller_id !== undefined)
          throw invalid('caller_id is for add only; leave it out on delete');
        const body: ConferenceRequest = {
          action: args.action as 'add' | 'delete',
          number: args.number as string,
          ...(args.caller_id !== undefined && { callerId: args.caller_id as string }),
        };
        return { ...(await conferenceCall(call.ctx, call.info, body, call.log)) };
      },
    },
  ),
  send_dtmf: builtin(
    'send_dtmf',
    'Press keys on the phone line toward the other side, as for an automated menu: digits 0-9, *, # and A-D, in order, after what you said before.',
    { digits: { type: 'string', pattern: '^[0-9*#A-D]{1,32}$', description: '1 to 32 of 0-9 * # A-D' } },
    ['digits'],
    {
      maxMs: 1_000,
      respond: true,
      async run(args, call) {
        if (!call.carriesDigits)
          throw new BridgeError(
            'unsupported_for_dialect',
            `the ${call.info.dialect ?? 'default'} media stream carries no digits toward the provider`,
          );
        for (const digit of args.digits as string) call.port.dtmf(digit);
        return { ok: true };
      },
    },
  ),
  send_message: builtin(
    'send_message',
    "Send the caller a message to their phone number: on chat, free text (only within 24 hours of the caller's last message) or an approved template; on rcs, a template only.",
    {
      channel: { type: 'string', enum: ['chat', 'rcs'] },
      text: { type: 'string', minLength: 1, maxLength: 4096, description: 'chat: the message' },
      template: {
        type: 'string',
        minLength: 1,
        maxLength: 64,
        description: 'the name of an approved template',
      },
      variables: {
        description:
          "the template's variables: chat, the body's values in order (an array of strings); rcs, each variable's name to its value (an object of strings)",
        anyOf: [
          { type: 'array', items: { type: 'string' } },
          { type: 'object', additionalProperties: { type: 'string' } },
        ],
      },
    },
    ['channel'],
    {
      maxMs: CALL_MAX_MS,
      respond: true,
      async run(args, call) {
        const body = sendBody(args);
        let checked: ReturnType<typeof checkSendBody>;
        try {
          checked = checkSendBody(body);
        } catch (err) {
          // The route's 400 names a field of its own body: to the model it is an argument that is wrong.
          if (err instanceof BridgeError) throw invalid(err.message);
          throw err;
        }
        const result = await sendToCaller(call.ctx, call.log, call.info, checked, body);
        return { message_id: result.message_id, status: result.status };
      },
    },
  ),
};

/** The tool's arguments as the message route's body (the route's rules then apply unchanged). */
function sendBody(args: Record<string, unknown>): SendBody {
  const { channel, text, template, variables } = args as {
    channel: 'chat' | 'rcs';
    text?: string;
    template?: string;
    variables?: readonly string[] | Record<string, string>;
  };
  if (text !== undefined && template !== undefined) throw invalid('give text or template, not both');
  if (text === undefined && template === undefined) throw invalid('give text, or template (and variables)');
  if (channel === 'rcs') {
    if (text !== undefined)
      throw invalid('rcs sends templates only: give template (and variables), or use chat');
    if (Array.isArray(variables))
      throw invalid("rcs variables are each template variable's name to its value: an object of strings");
    return {
      channel,
      template_name: template!,
      ...(variables !== undefined && { params: variables as Record<string, string> }),
    };
  }
  if (text !== undefined) {
    if (variables !== undefined) throw invalid('variables are for a template; leave them out with text');
    return { channel, message: { type: 'text', text: { body: text } } };
  }
  if (variables !== undefined && !Array.isArray(variables))
    throw invalid("chat variables are the template body's values in order: an array of strings");
  return {
    channel,
    template: { name: template!, ...(variables !== undefined && { body_params: [...variables] }) },
  };
}
