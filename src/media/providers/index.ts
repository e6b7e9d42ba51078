/** The provider dialects by name: `/v1/media` is `default`, `/v1/media/<name>[/<tenant>]` the others. */
import { asteriskDialect } from './asterisk.js';
import { defaultDialect } from './default.js';
import { exotelDialect } from './exotel.js';
import { jambonzDialect } from './jambonz.js';
import { plivoDialect } from './plivo.js';
import { telnyxDialect } from './telnyx.js';
import { twilioDialect } from './twilio.js';
import type { ProviderDialect, ProviderDialectName } from './types.js';
import { vonageDialect } from './vonage.js';

export const DIALECTS: Readonly<Record<ProviderDialectName, ProviderDialect>> = {
  default: defaultDialect,
  twilio: twilioDialect,
  telnyx: telnyxDialect,
  plivo: plivoDialect,
  vonage: vonageDialect,
  exotel: exotelDialect,
  jambonz: jambonzDialect,
  asterisk: asteriskDialect,
};

export type * from './types.js';
