/**
 * What a test file needs from the machine beyond `npm ci` (redis-server, chromium; both from Debian's
 * packages, scripts/install-test-deps.sh). Where one is missing the file's tests are skipped with the
 * reason printed, on a developer's machine; in CI they fail instead, so a CI run that lacks one can never
 * pass by skipping the tests that need it.
 */

/** Whether this run is CI: `CI` set to anything but "", "0" or "false" (.ci/run sets CI=true). */
export function inCI(env: NodeJS.ProcessEnv = process.env): boolean {
  const ci = env.CI;
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false';
}

/**
 * `why` a file's tests cannot run here, or undefined when they can. Undefined passes through; a reason is
 * printed and returned (the file skips its tests with it) outside CI, and thrown in CI, failing the file.
 */
export function skipUnlessCI(file: string, why: string | undefined): string | undefined {
  if (why === undefined) return undefined;
  if (inCI()) throw new Error(`${file}: ${why}; CI must run these tests, not skip them`);
  console.warn(`${file}: skipped: ${why}`);
  return why;
}
