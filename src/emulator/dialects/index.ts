/**
 * The emulated providers: each provider dialect's twin (its module here), by the registry's names
 * (src/dialects/), behind one constructor. The types make the list whole: a dialect declared without a
 * twin does not compile.
 */
import type { Codec } from '../../audio/format.js';
import type { ProviderDialectName } from '../../dialects/index.js';
import { asteriskTwin } from './asterisk.js';
import { audiosocketTwin } from './audiosocket.js';
import { defaultTwin } from './default.js';
import { exotelTwin } from './exotel.js';
import { jambonzTwin } from './jambonz.js';
import { plivoTwin } from './plivo.js';
import { telnyxTwin } from './telnyx.js';
import { twilioTwin } from './twilio.js';
import type { DefaultSettings, DialectName, LegOptions, ProviderLeg, ProviderTwin } from './types.js';
import { vonageTwin } from './vonage.js';

export * from './types.js';

export const TWINS: { readonly [N in ProviderDialectName]: ProviderTwin } = {
  default: defaultTwin,
  twilio: twilioTwin,
  telnyx: telnyxTwin,
  plivo: plivoTwin,
  exotel: exotelTwin,
  vonage: vonageTwin,
  jambonz: jambonzTwin,
  asterisk: asteriskTwin,
  audiosocket: audiosocketTwin,
};

/** Rates a dialect's calls may use; the first is its default. */
export const DIALECT_RATES: Readonly<Record<DialectName, readonly number[]>> = Object.fromEntries(
  Object.entries(TWINS).map(([name, twin]) => [name, twin.rates]),
) as Record<DialectName, readonly number[]>;

/** The PCM rate a dialect's call runs at, given the rate and codec asked for. */
export function dialectRate(dialect: DialectName, rate?: number, codec?: Codec): number {
  const twin = TWINS[dialect];
  return twin.fixedRate?.(codec) ?? rate ?? twin.rates[0]!;
}

/** Throws with a message naming what is wrong when the options do not fit the dialect. */
export function createProviderLeg(
  dialect: DialectName,
  o: LegOptions,
  defaults?: DefaultSettings,
): ProviderLeg {
  return TWINS[dialect].create(o, defaults);
}
