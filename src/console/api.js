// The REST token (kept in this tab's sessionStorage only, never a cookie) and the calls the page makes
// with it: JSON requests, audio downloads, and the Server-Sent Events of GET /v1/events, read through
// fetch so the token goes in the Authorization header rather than the URL.

const KEY = 'voicebridge.token';

/** A token from `#token=` (taken out of the address at once), else the one this tab already holds. */
export function takeToken() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem(KEY, decodeURIComponent(m[1]));
    history.replaceState(null, '', location.pathname + location.search);
  }
  return sessionStorage.getItem(KEY);
}

export function storeToken(token) {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken() {
  sessionStorage.removeItem(KEY);
}

/** An error a person can act on: the route, the status and the bridge's own message. */
export class ApiError extends Error {
  constructor(what, status, body) {
    super(`${what}: ${status}${body?.message ? ` ${body.message}` : ''}`);
    this.status = status;
    this.code = body?.error;
  }
}

export class Api {
  constructor(token) {
    this.token = token;
  }

  headers(extra = {}) {
    return { authorization: `Bearer ${this.token}`, ...extra };
  }

  async json(method, path, body) {
    const res = await fetch(path, {
      method,
      headers: this.headers(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed = {};
    try {
      parsed = text === '' ? {} : JSON.parse(text);
    } catch {}
    if (!res.ok) throw new ApiError(`${method} ${path.split('?')[0]}`, res.status, parsed);
    return parsed;
  }

  async blob(path) {
    const res = await fetch(path, { headers: this.headers() });
    if (!res.ok) {
      let body = {};
      try {
        body = await res.json();
      } catch {}
      throw new ApiError(`GET ${path.split('?')[0]}`, res.status, body);
    }
    return res.blob();
  }

  /** A WebSocket URL on this bridge with the token as ?token= (browsers cannot set its headers). */
  wsUrl(path, params = {}) {
    const u = new URL(path, location.href);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    u.searchParams.set('token', this.token);
    return u.href;
  }

  /**
   * Reads GET /v1/events until `signal` aborts, calling `onEvent(type, data)` per message; reconnects
   * after a dropped stream (1 s, doubling to 15 s). A 401 or 403 is final: `onError` gets it and the
   * stream is not retried.
   */
  async events(onEvent, onError, signal, onOpen = () => {}) {
    let wait = 1000;
    while (!signal.aborted) {
      try {
        const res = await fetch('/v1/events', {
          headers: this.headers({ accept: 'text/event-stream' }),
          signal,
        });
        if (!res.ok) {
          let body = {};
          try {
            body = await res.json();
          } catch {}
          const err = new ApiError('GET /v1/events', res.status, body);
          if (res.status === 401 || res.status === 403) return onError(err);
          throw err;
        }
        onOpen();
        wait = 1000;
        await readSse(res.body, onEvent);
      } catch (err) {
        if (signal.aborted) return;
        onError(err);
      }
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(15_000, wait * 2);
    }
  }
}

async function readSse(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let type = 'message';
  let data = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      if (line === '') {
        if (data !== '') {
          try {
            onEvent(type, JSON.parse(data));
          } catch {}
        }
        type = 'message';
        data = '';
      } else if (line.startsWith('event:')) type = line.slice(6).trim();
      else if (line.startsWith('data:')) data += (data === '' ? '' : '\n') + line.slice(5).trimStart();
      nl = buf.indexOf('\n');
    }
  }
}
