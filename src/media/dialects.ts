/**
 * The dialect registry at run time: each dialect declared in src/dialects/ joined to the module that
 * runs it, a bot dialect to its leg (src/media/bot/<dialect>.ts) and a provider dialect to its wire
 * (src/media/providers/<dialect>.ts). The types make the two lists agree: a dialect declared without a
 * module here, or a module under another name, does not compile. Read once a call (the endpoint picks a
 * provider dialect, the session a bot dialect), never per chunk.
 */
import type { BotDialectName, ProviderDialectName } from '../dialects/index.js';
import { bridgeBot } from './bot/bridge.js';
import { builtinBot } from './bot/builtin-dialect.js';
import { deepgramAgentBot } from './bot/deepgram-agent.js';
import type { BotDialect } from './bot/dialect.js';
import { elevenlabsAgentBot } from './bot/elevenlabs-agent.js';
import { geminiLiveBot } from './bot/gemini-live.js';
import { openaiRealtimeBot } from './bot/openai-realtime.js';
import { twilioBot } from './bot/twilio.js';
import { ultravoxBot } from './bot/ultravox.js';
import { asteriskDialect } from './providers/asterisk.js';
import { audioSocketDialect } from './providers/audiosocket.js';
import { defaultDialect } from './providers/default.js';
import { exotelDialect } from './providers/exotel.js';
import { jambonzDialect } from './providers/jambonz.js';
import { plivoDialect } from './providers/plivo.js';
import { telnyxDialect } from './providers/telnyx.js';
import { twilioDialect } from './providers/twilio.js';
import type { ProviderDialect } from './providers/types.js';
import { vonageDialect } from './providers/vonage.js';

export const BOT_DIALECT_MODULES: { readonly [N in BotDialectName]: BotDialect } = {
  bridge: bridgeBot,
  twilio: twilioBot,
  'openai-realtime': openaiRealtimeBot,
  'elevenlabs-agent': elevenlabsAgentBot,
  'deepgram-agent': deepgramAgentBot,
  ultravox: ultravoxBot,
  'gemini-live': geminiLiveBot,
  builtin: builtinBot,
};

export const PROVIDER_DIALECT_MODULES: { readonly [N in ProviderDialectName]: ProviderDialect } = {
  default: defaultDialect,
  twilio: twilioDialect,
  telnyx: telnyxDialect,
  plivo: plivoDialect,
  exotel: exotelDialect,
  vonage: vonageDialect,
  jambonz: jambonzDialect,
  asterisk: asteriskDialect,
  audiosocket: audioSocketDialect,
};
