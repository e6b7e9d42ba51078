/**
 * Validation of the messaging APIs' request bodies (chat and RCS): each
 * function takes a parsed JSON body and returns the typed value or throws a 400 BridgeError naming the
 * field and what is accepted. Pure, no I/O. The client checks every request with these before it is
 * sent, and the provider emulator refuses with the same messages, so where a document gives a message
 * (`action is required`, `Template name invalid`, ...) it is used word for word.
 */
export * from './validate-chat.js';
export {
  chatPhoneProblem,
  E164,
  LIMITS,
  LOCALE,
  RCS_MOBILE,
  rcsMobileFrom,
  TEMPLATE_NAME,
} from './validate-fields.js';
export * from './validate-rcs.js';
