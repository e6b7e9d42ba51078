// The live calls of the tenant, kept from GET /v1/events: one card per call with its caller, direction,
// dialect, bot, formats, a running duration, conference members, a level meter per leg, the bot's
// latency and a timeline, and a "denoised" badge on a call whose caller the bot hears through the noise
// suppressor; ended calls stay (greyed) for their recordings.
import { el } from './dom.js';

const MAX_TIMELINE = 50;
const MAX_ENDED = 20;

/** The call's formats as GET /v1/events gives them: "slin 16000 Hz binary", or both rates when they differ. */
function formatOf(s) {
  const f = s.formats;
  if (f === undefined || f === null || typeof f !== 'object') return '';
  const inRate = f.input_sample_rate;
  const outRate = f.output_sample_rate;
  const rate = inRate === outRate || outRate === undefined ? `${inRate} Hz` : `${inRate}/${outRate} Hz`;
  return [f.codec, inRate === undefined ? undefined : rate, f.encoding].filter(Boolean).join(' ');
}

function botOf(s) {
  const b = s.bot;
  if (b === undefined || b === null) return '';
  if (typeof b === 'string') return b;
  // A built-in's URL names it ("builtin:echo"); another bot's dialect goes before its URL.
  if (typeof b.url === 'string' && b.url.startsWith('builtin:')) return b.url;
  return [b.dialect, b.url].filter(Boolean).join(' ');
}

function duration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** What a timeline line says about an event of the call. */
function describe(type, d) {
  switch (type) {
    case 'mark':
      return `mark ${d.name ?? ''}`.trim();
    case 'clear':
      return 'clear (barge-in)';
    case 'error':
      return `error ${d.code ?? ''}: ${d.message ?? ''}`;
    case 'bot_latency_ms':
      return `bot answered in ${Math.round(d.bot_latency_ms)} ms`;
    case 'message_status':
      return `${d.channel ?? 'message'} ${d.message_id ?? ''} ${d.status ?? ''}${d.error ? ` (${d.error.message ?? d.error.code ?? 'error'})` : ''}`;
    case 'tool_call':
      return `tool ${d.name ?? ''} ${d.outcome ?? ''} in ${Math.round(d.duration_ms ?? 0)} ms`;
    case 'idle':
      return `silent ${Math.round((d.silent_ms ?? 0) / 1000)} s: ${d.action === 'hangup' ? 'the call ends' : 'the bot is asked to speak'}`;
    case 'message_button':
      return `${d.channel ?? 'message'} button "${d.button_text ?? d.button_id ?? ''}" tapped`;
    default: {
      const rest = { ...d };
      delete rest.session_id;
      return `${type.replace(/_/g, ' ')} ${JSON.stringify(rest)}`;
    }
  }
}

export class CallList {
  /** `actions`: listen(id, leg, button), recording(id, container), consult(id, number), conference(id, action, number). */
  constructor(root, actions) {
    this.root = root;
    this.actions = actions;
    this.calls = new Map();
    this.empty = el('p', { class: 'empty' }, 'No calls yet. "Call the bot" places one.');
    root.append(this.empty);
    this.timer = setInterval(() => this.tick(), 1000);
  }

  upsert(s, live = true) {
    let c = this.calls.get(s.session_id);
    if (c === undefined) {
      c = this.card(s);
      this.calls.set(s.session_id, c);
      this.root.prepend(c.root);
    }
    c.session = { ...c.session, ...s };
    c.live = live;
    this.fill(c);
    this.empty.hidden = this.calls.size > 0;
    return c;
  }

  ended(s) {
    const c = this.upsert(s, false);
    c.endedAt = Date.now();
    c.root.classList.add('ended');
    c.status.textContent = 'ended';
    this.addLine(c, 'call ended');
    const ended = [...this.calls.values()].filter((x) => !x.live);
    for (const old of ended.slice(0, Math.max(0, ended.length - MAX_ENDED))) {
      old.root.remove();
      this.calls.delete(old.session.session_id);
    }
  }

  level(d) {
    const c = this.calls.get(d.session_id);
    if (c === undefined) return;
    const set = (meter, out, v) => {
      meter.value = v === null || v === undefined ? -90 : Math.max(-90, v);
      out.textContent = v === null || v === undefined ? '-∞' : `${Math.round(v)}`;
    };
    set(c.callerMeter, c.callerDb, d.caller_dbfs);
    set(c.botMeter, c.botDb, d.bot_dbfs);
  }

  event(type, d) {
    const c = this.calls.get(d.session_id);
    if (c === undefined) return;
    if (type === 'bot_latency_ms') {
      c.latency.textContent = `${Math.round(d.bot_latency_ms)} ms`;
    }
    this.addLine(c, describe(type, d), type === 'error' || (type === 'tool_call' && d.outcome !== 'ok'));
  }

  addLine(c, text, bad = false) {
    const t = new Date().toLocaleTimeString();
    c.timeline.prepend(el('li', bad ? { class: 'bad' } : {}, el('time', {}, t), ` ${text}`));
    while (c.timeline.children.length > MAX_TIMELINE) c.timeline.lastElementChild.remove();
  }

  tick() {
    for (const c of this.calls.values()) {
      if (!c.live) continue;
      c.duration.textContent = duration(Date.now() - Date.parse(c.session.started_at));
    }
  }

  fill(c) {
    const s = c.session;
    c.caller.textContent = s.customer_phone || 'unknown caller';
    c.meta.textContent = [s.direction, s.dialect ?? 'default', botOf(s), formatOf(s)]
      .filter(Boolean)
      .join(' · ');
    c.duration.textContent = duration((c.endedAt ?? Date.now()) - Date.parse(s.started_at));
    c.denoised.hidden = s.denoise !== true;
    const members = s.conferenceNumbers ?? [];
    c.members.replaceChildren(
      ...members.map((n) =>
        el(
          'li',
          {},
          `${n} `,
          el(
            'button',
            { type: 'button', onclick: () => this.actions.conference(s.session_id, 'delete', n) },
            'Remove',
          ),
        ),
      ),
    );
    c.membersBox.hidden = members.length === 0;
  }

  card(s) {
    const id = s.session_id;
    const c = { session: s, live: true };
    c.caller = el('strong', { class: 'caller' });
    c.status = el('span', { class: 'status' }, 'live');
    c.denoised = el(
      'span',
      { class: 'badge', title: 'The bot hears the caller through the noise suppressor', hidden: true },
      'denoised',
    );
    c.duration = el('span', { class: 'duration', 'aria-label': 'Duration' });
    c.meta = el('div', { class: 'meta' });
    c.callerMeter = el('meter', {
      min: -90,
      max: 0,
      low: -50,
      high: -6,
      value: -90,
      'aria-label': 'Caller level',
    });
    c.botMeter = el('meter', { min: -90, max: 0, low: -50, high: -6, value: -90, 'aria-label': 'Bot level' });
    c.callerDb = el('output', {}, '-∞');
    c.botDb = el('output', {}, '-∞');
    c.latency = el('output', { 'aria-label': 'Bot latency' }, '–');
    c.members = el('ul', { class: 'members' });
    c.membersBox = el('div', { hidden: true }, 'Conference: ', c.members);
    c.timeline = el('ol', { class: 'timeline', 'aria-label': 'Timeline' });
    const leg = el(
      'select',
      { 'aria-label': 'Leg to listen to' },
      el('option', { value: 'mixed' }, 'mixed'),
      el('option', { value: 'caller' }, 'caller'),
      el('option', { value: 'bot' }, 'bot'),
    );
    const listen = el('button', { type: 'button', 'aria-pressed': 'false' }, 'Listen');
    listen.onclick = () => this.actions.listen(id, leg.value, listen);
    const recBox = el('div', { class: 'recordings' });
    const recording = el('button', { type: 'button' }, 'Recording');
    recording.onclick = () => this.actions.recording(id, recBox);
    const number = el('input', {
      type: 'tel',
      placeholder: 'number',
      'aria-label': 'Number to consult or add',
      pattern: '\\+?[0-9]{1,32}',
    });
    const consult = el('button', { type: 'button' }, 'Consult');
    consult.onclick = () => this.actions.consult(id, number.value);
    const add = el('button', { type: 'button' }, 'Add to conference');
    add.onclick = () => this.actions.conference(id, 'add', number.value);
    c.root = el(
      'article',
      { class: 'call', 'data-session-id': id, 'aria-label': `Call ${id}` },
      el('header', {}, c.caller, c.denoised, c.status, c.duration),
      el('div', { class: 'id' }, id),
      c.meta,
      el(
        'div',
        { class: 'levels' },
        el('label', {}, 'caller ', c.callerMeter, c.callerDb),
        el('label', {}, 'bot ', c.botMeter, c.botDb),
        el('span', {}, 'bot latency ', c.latency),
      ),
      c.membersBox,
      el('div', { class: 'controls' }, leg, listen, recording, number, consult, add),
      recBox,
      el('details', {}, el('summary', {}, 'Timeline'), c.timeline),
    );
    return c;
  }
}
