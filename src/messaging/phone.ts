/**
 * The phone-number rules of messaging, once: a chat recipient (country code and number, digits only,
 * chat.md), an RCS mobile (10 digits, rcs.md), and a live call's `customer_phone` read as either.
 * Which country codes exist and each country's possible lengths are libphonenumber-js's knowledge
 * (Google's metadata), kept current by its maintainers.
 */
import { parsePhoneNumberFromString, validatePhoneNumberLength } from 'libphonenumber-js';
import { BridgeError } from '../errors.js';
import type { SessionInfo } from '../state/types.js';

/** rcs.md: "Recipient mobile number, 10 digits". */
export const RCS_MOBILE = /^[0-9]{10}$/;

/**
 * What is wrong with `digits` as a chat recipient (country code and number, digits only), worded to
 * follow the field's name, or undefined when it is a possible number: a known country calling code
 * followed by a national number of a length that country uses. Possible, not valid: the number may
 * still be unassigned or unreachable, which only the network knows.
 */
export function chatPhoneProblem(digits: string): string | undefined {
  if (digits.includes('+')) return 'must be digits only: no "+"';
  if (/\s/.test(digits)) return 'must be digits only: no spaces';
  if (!/^[0-9]+$/.test(digits)) return 'must be digits only, the country code first';
  if (digits.startsWith('0')) return 'must start with the country code, not a 0';
  const parsed = parsePhoneNumberFromString(`+${digits}`);
  const why = validatePhoneNumberLength(`+${digits}`);
  if (parsed?.isPossible() === true && why === undefined) return undefined;
  if (parsed === undefined || why === 'INVALID_COUNTRY') {
    return why === 'TOO_SHORT'
      ? 'is too short: a country code and a number are needed'
      : 'starts with no known country code (is the country code missing?)';
  }
  const cc = parsed.countryCallingCode;
  const n = parsed.nationalNumber.length;
  if (why === 'TOO_LONG') return `has ${n} digits after the country code ${cc}: too many for it`;
  const length = why === 'TOO_SHORT' ? 'too few' : 'a length it does not use';
  return `has ${n} digits after the country code ${cc}: ${length} (is the country code missing?)`;
}

/**
 * The 10-digit national number of `e164Digits` (digits with the country code, a "+" allowed) when its
 * country calling code is `countryCode` and its national number has 10 digits; else undefined. RCS
 * contacts take a 10-digit mobile (rcs.md), e.g. `rcsMobileFrom('919876543210', '91')` is `9876543210`.
 */
export function rcsMobileFrom(e164Digits: string, countryCode: string): string | undefined {
  if (!/^\+?[0-9]+$/.test(e164Digits) || !/^[1-9][0-9]{0,2}$/.test(countryCode)) return undefined;
  const n = parsePhoneNumberFromString(e164Digits.startsWith('+') ? e164Digits : `+${e164Digits}`);
  if (n === undefined || n.countryCallingCode !== countryCode) return undefined;
  return RCS_MOBILE.test(n.nationalNumber) ? n.nationalNumber : undefined;
}

// ---------------------------------------------------------------------------------------------------
// A live call's customer_phone

/** What a message needs of the number: said in every refusal of a session's customer_phone. */
const E164_ACCEPTED =
  'a chat or RCS message needs the customer\'s number in E.164: its country code, then the national number ("+", spaces, dashes, dots and brackets allowed)';

/**
 * The session's customer_phone as the chat API takes it: digits only, with the country code. A number
 * that cannot be messaged is a 422 naming customer_phone (the provider's session_start gave it, not the
 * request); the refusal says what is wrong, never the number.
 */
export function customerNumber(session: SessionInfo): string {
  const raw = session.customer_phone;
  const digits = raw
    ?.trim()
    .replace(/[\s().-]/g, '')
    .replace(/^(\+|00)/, '');
  const problem =
    digits === undefined || digits === ''
      ? 'is missing: the session_start gave none'
      : /^[0-9]+$/.test(digits)
        ? chatPhoneProblem(digits)
        : 'holds characters other than digits and "+", spaces, dashes, dots or brackets';
  if (problem !== undefined || digits === undefined) {
    throw new BridgeError(
      'unusable_customer_phone',
      `the session's customer_phone (from its session_start) ${problem ?? 'is missing'}; ${E164_ACCEPTED}`,
      { field: 'customer_phone' },
    );
  }
  return digits;
}

/**
 * The session's customer_phone as the RCS launcher takes it: the 10-digit national number, when the
 * number has the country calling code RCS is sent to (MESSAGING_RCS_COUNTRY_CODE). Any other number is
 * refused: its last 10 digits would be somebody else's mobile in that country.
 */
export function customerMobile(session: SessionInfo, countryCode: string): string {
  const digits = customerNumber(session);
  const mobile = rcsMobileFrom(digits, countryCode);
  if (mobile === undefined) {
    const parsed = parsePhoneNumberFromString(`+${digits}`);
    const got =
      parsed === undefined || parsed.countryCallingCode !== countryCode
        ? `has the country code ${parsed?.countryCallingCode ?? 'of no country'}`
        : `has ${parsed.nationalNumber.length} digits after it`;
    throw new BridgeError(
      'unusable_customer_phone',
      `the session's customer_phone (from its session_start) cannot take RCS: RCS goes to numbers with the country code ${countryCode} (MESSAGING_RCS_COUNTRY_CODE) and a 10-digit national number; this one ${got} (chat takes any country)`,
      { field: 'customer_phone' },
    );
  }
  return mobile;
}
