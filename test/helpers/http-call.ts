/** A JSON answer: the status, the body parsed (`{}` when it is empty or not JSON), its text, and how long it took. */
export interface JsonAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly text: string;
  readonly ms: number;
}

/** One real HTTP request to a local server (the bridge, the emulator, a receiver), bounded by `timeoutMs`. */
export async function call(
  base: string,
  method: string,
  path: string,
  o: { token?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<JsonAnswer> {
  const started = performance.now();
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(o.token !== undefined ? { authorization: `Bearer ${o.token}` } : {}),
      ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
    signal: AbortSignal.timeout(o.timeoutMs ?? 30_000),
  });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body, text, ms: performance.now() - started };
}
