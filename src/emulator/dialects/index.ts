/**
 * The emulated providers, one a dialect, behind one constructor.
 */
import { bytesForMs, type Codec } from '../../audio/format.js';
import { AsteriskLeg } from './asterisk.js';
import { AudioSocketLeg } from './audiosocket.js';
import { DefaultLeg, type DefaultSettings } from './default.js';
import { ExotelLeg } from './exotel.js';
import { JambonzLeg } from './jambonz.js';
import { PlivoLeg } from './plivo.js';
import { TelnyxLeg } from './telnyx.js';
import { TwilioLeg } from './twilio.js';
import type { DialectName, LegOptions, ProviderLeg } from './types.js';
import { VonageLeg } from './vonage.js';

export type { DefaultSettings } from './default.js';
export * from './types.js';

/** Rates a dialect's calls may use; the first is its default. */
export const DIALECT_RATES: Readonly<Record<DialectName, readonly number[]>> = {
  default: [8000, 16000],
  twilio: [8000],
  telnyx: [8000],
  plivo: [8000, 16000],
  exotel: [8000, 16000, 24000],
  vonage: [16000, 8000, 24000],
  jambonz: [8000, 16000, 24000, 48000, 64000],
  asterisk: [8000, 16000],
  audiosocket: [8000, 16000, 24000, 48000],
};

/** The PCM rate a dialect's call runs at, given the rate and codec asked for. */
export function dialectRate(dialect: DialectName, rate?: number, codec?: Codec): number {
  if (dialect === 'twilio' || dialect === 'telnyx') return 8000;
  if ((dialect === 'plivo' || dialect === 'asterisk') && (codec ?? 'pcmu') !== 'slin') return 8000;
  return rate ?? DIALECT_RATES[dialect][0]!;
}

/** Throws with a message naming what is wrong when the options do not fit the dialect. */
export function createProviderLeg(
  dialect: DialectName,
  o: LegOptions,
  defaults?: DefaultSettings,
): ProviderLeg {
  switch (dialect) {
    case 'default':
      return new DefaultLeg(
        o,
        defaults ?? {
          codecName: o.codec ?? 'slin',
          outputRate: o.rate,
          encoding: 'binary',
          chunkBytes: bytesForMs(o.codec ?? 'slin', o.rate, 20),
        },
      );
    case 'twilio':
      return new TwilioLeg(o);
    case 'telnyx':
      return new TelnyxLeg(o);
    case 'plivo':
      return new PlivoLeg(o);
    case 'exotel':
      return new ExotelLeg(o);
    case 'vonage':
      return new VonageLeg(o);
    case 'jambonz':
      return new JambonzLeg(o);
    case 'asterisk':
      return new AsteriskLeg(o);
    case 'audiosocket':
      return new AudioSocketLeg(o);
  }
}
