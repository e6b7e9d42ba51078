// The console: sign-in, the live calls from GET /v1/events, listen-in, recordings, call control, and
// the softphone. Plain ES modules, no build step; everything it loads or talks to is this bridge.
import { Api, forgetToken, storeToken, takeToken } from './api.js';
import { CallList } from './calls.js';
import { el } from './dom.js';
import { Listener } from './listen.js';
import { bestToneSnrDb } from './measure.js';
import { Softphone } from './softphone.js';

const $ = (id) => document.getElementById(id);

function alertText(text) {
  const box = $('alert');
  box.textContent = text;
  box.hidden = text === '';
}

function signedOut(message = '') {
  $('main').hidden = true;
  $('sign-out').hidden = true;
  $('sign-in').hidden = false;
  alertText(message);
}

let session;

function signIn(token) {
  const api = new Api(token);
  const abort = new AbortController();
  const listeners = new Map();
  const calls = new CallList($('calls'), {
    listen: (id, leg, button) => toggleListen(api, listeners, id, leg, button),
    recording: (id, box) => showRecordings(api, id, box),
    consult: (id, number) => control(api, id, 'consult', { calledParty: number }),
    conference: (id, action, number) => control(api, id, 'conference', { action, number }),
  });
  const phone = new Softphone(api, {
    state: (text, live) => {
      $('phone-state').textContent = text;
      $('call').disabled = live;
      $('hang-up').disabled = !live;
    },
    rtt: (ms) => {
      $('rtt').textContent = `${Math.round(ms)} ms`;
    },
    levels: (m) => {
      $('mic').value = m.mic ?? -90;
      $('speaker').value = m.speaker ?? -90;
      $('jitter').textContent = `${Math.round(m.queuedMs)} ms queued, ${m.underruns} gaps`;
    },
    error: (message) => alertText(message),
  });
  session = { api, abort, calls, phone, listeners };
  $('sign-in').hidden = true;
  $('main').hidden = false;
  $('sign-out').hidden = false;
  alertText('');

  api.events(
    (type, d) => {
      if (type === 'session_started' || type === 'session_updated') calls.upsert(d);
      else if (type === 'session_ended') calls.ended(d);
      else if (type === 'level') calls.level(d);
      else if (typeof d?.session_id === 'string') calls.event(type, d);
    },
    (err) => {
      $('stream').textContent = 'not connected';
      if (err.status === 401) {
        forgetToken();
        stop();
        signedOut(`${err.message}. Sign in again.`);
      } else alertText(err.message);
    },
    abort.signal,
    () => {
      $('stream').textContent = 'live';
      // A dropped stream's message goes once the stream is back.
      if ($('alert').textContent.startsWith('GET /v1/events')) alertText('');
    },
  );
  // What is live already, before the stream's first news of it; a token the bridge refuses (401) goes
  // back to the sign-in form, one without sessions:read (403) stays, for what its scopes allow.
  api.json('GET', '/v1/sessions').then(
    (list) => {
      for (const s of list) calls.upsert(s);
    },
    (err) => {
      if (err.status === 401) {
        forgetToken();
        stop();
        signedOut(`${err.message}. Sign in again.`);
      } else alertText(err.message);
    },
  );
}

function stop() {
  if (session === undefined) return;
  session.abort.abort();
  clearInterval(session.calls.timer);
  session.phone.hangUp();
  for (const l of session.listeners.values()) l.stop();
  $('calls').replaceChildren();
  session = undefined;
}

function toggleListen(api, listeners, id, leg, button) {
  const on = listeners.get(id);
  if (on !== undefined) {
    on.stop();
    return;
  }
  const l = new Listener(api, id, leg, {
    state: (text, live) => {
      button.setAttribute('aria-pressed', String(live));
      button.title = text;
      if (!live) listeners.delete(id);
    },
    error: (message) => alertText(message),
  });
  listeners.set(id, l);
}

async function showRecordings(api, id, box) {
  box.replaceChildren('Loading recordings…');
  try {
    const list = await api.json('GET', `/v1/recordings?session_id=${encodeURIComponent(id)}`);
    if (list.length === 0) return box.replaceChildren('No recording of this call.');
    box.replaceChildren(
      ...list.map((r) => {
        const secs = (r.duration_ms / 1000).toFixed(1);
        if (r.in_progress) return el('div', { class: 'recording' }, `${secs} s so far, still recording`);
        const audio = el('audio', { controls: true, 'aria-label': `Recording ${r.recording_id}` });
        const link = el('a', { download: `${r.recording_id}.wav` }, 'Download');
        const blob = api.blob(`/v1/recordings/${encodeURIComponent(r.recording_id)}`).then((b) => {
          const url = URL.createObjectURL(b);
          audio.src = url;
          link.href = url;
          return b;
        });
        blob.catch((err) => alertText(err.message));
        recordings.set(r.recording_id, blob);
        const note = r.failed ? ` (stopped early: ${r.failed})` : '';
        return el(
          'div',
          { class: 'recording' },
          `${secs} s, ${r.sample_rate} Hz stereo${note} `,
          audio,
          link,
        );
      }),
    );
  } catch (err) {
    box.replaceChildren(err.message);
    alertText(err.message);
  }
}

async function control(api, id, what, body) {
  try {
    const res = await api.json('POST', `/v1/sessions/${encodeURIComponent(id)}/${what}`, body);
    alertText('');
    $('phone-state').textContent =
      `${what}: ${res.status ?? 'done'}${res.dialStatus ? ` (${res.dialStatus})` : ''}`;
  } catch (err) {
    alertText(err.message);
  }
}

/** Recordings fetched by the page, by id (what a test or a curious person can inspect). */
const recordings = new Map();

function keypad() {
  for (const d of ['1', '2', '3', '4', '5', '6', '7', '8', '9', '*', '0', '#']) {
    $('keypad').append(
      el('button', { type: 'button', 'aria-label': `Key ${d}`, onclick: () => session?.phone.dtmf(d) }, d),
    );
  }
}

$('sign-in').addEventListener('submit', (e) => {
  e.preventDefault();
  const token = $('token').value.trim();
  if (token === '') return;
  storeToken(token);
  $('token').value = '';
  signIn(token);
});
$('sign-out').addEventListener('click', () => {
  forgetToken();
  stop();
  signedOut();
});
$('call').addEventListener('click', () =>
  session?.phone.call({ voiceProcessing: $('voice-processing').checked }),
);
$('hang-up').addEventListener('click', () => session?.phone.hangUp());
keypad();

const token = takeToken();
if (token) signIn(token);
else signedOut();

// For diagnostics from the browser's console (and the browser tests): the live objects and the tone
// measurement the page applies to the audio it receives.
window.voicebridge = {
  get softphone() {
    return session?.phone;
  },
  get listeners() {
    return session?.listeners;
  },
  recordings,
  bestToneSnrDb,
};
