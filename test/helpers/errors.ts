/** The BridgeError a promise rejects with; anything else it rejects with is rethrown, and success fails. */
import { BridgeError } from '../../src/errors.js';

export async function failure(p: Promise<unknown>): Promise<BridgeError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof BridgeError) return err;
    throw err;
  }
  throw new Error('expected a failure');
}
