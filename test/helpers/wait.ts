/** Polls `cond` until it holds or the deadline passes (tests poll with deadlines instead of sleeping). */
export async function waitFor(
  cond: () => boolean,
  timeoutMs: number,
  what: string,
  stepMs = 5,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
