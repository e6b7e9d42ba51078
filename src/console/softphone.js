// "Call the bot": the microphone through the audio worklet as PCM16 at 16 kHz, to the media endpoint as
// a call of this tenant (a media token from POST /v1/media-tokens per call), the bot's audio back
// through the worklet's jitter buffer to the speaker. DTMF keys, "Hang up", and the round trip measured
// on the audio thread (audio-worklet.js says how).
import { RecentAudio } from './measure.js';

export const RATE = 16000;
/** Stop sending (and let the bridge's stale-audio rule do the rest) past this much unsent audio. */
const MAX_BUFFERED_BYTES = 32_000;

function newId() {
  const b = crypto.getRandomValues(new Uint8Array(8));
  return `softphone-${Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')}`;
}

/** An AudioContext at `rate` with the console's worklet loaded. */
export async function audioGraph(rate) {
  const ctx = new AudioContext({ sampleRate: rate, latencyHint: 'interactive' });
  await ctx.audioWorklet.addModule('/console/audio-worklet.js');
  if (ctx.state !== 'running') await ctx.resume();
  return ctx;
}

export class Softphone {
  /** `on`: state(text, live), rtt(ms), levels({mic, speaker, queuedMs, underruns}), error(message). */
  constructor(api, on) {
    this.api = api;
    this.on = on;
    this.ws = undefined;
    this.ctx = undefined;
    this.stream = undefined;
    this.node = undefined;
    this.sessionId = undefined;
    this.rtts = [];
    this.received = new RecentAudio(RATE, 4);
    this.sentFrames = 0;
    this.skippedFrames = 0;
  }

  get live() {
    return this.ws !== undefined;
  }

  async call({ voiceProcessing = true } = {}) {
    if (this.live) return;
    this.rtts = [];
    this.received = new RecentAudio(RATE, 4);
    this.on.state('Getting a media token…', true);
    try {
      const { token, media_url } = await this.api.json('POST', '/v1/media-tokens');
      this.stream = await navigator.mediaDevices.getUserMedia({
        audio: {
          channelCount: 1,
          echoCancellation: voiceProcessing,
          noiseSuppression: voiceProcessing,
          autoGainControl: voiceProcessing,
        },
      });
      this.ctx = await audioGraph(RATE);
      this.node = new AudioWorkletNode(this.ctx, 'pcm-bridge', {
        numberOfInputs: 1,
        numberOfOutputs: 1,
        outputChannelCount: [1],
        processorOptions: { prefillMs: 40, maxQueueMs: 200 },
      });
      this.ctx.createMediaStreamSource(this.stream).connect(this.node);
      this.node.connect(this.ctx.destination);
      this.node.port.onmessage = (e) => this.fromWorklet(e.data);
      this.open(`${media_url}?token=${encodeURIComponent(token)}`);
    } catch (err) {
      this.on.error(err.name === 'NotAllowedError' ? 'The microphone was not allowed' : err.message);
      this.cleanup('Call failed');
    }
  }

  open(url) {
    const ws = new WebSocket(url);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    this.sessionId = newId();
    this.on.state('Connecting…', true);
    ws.onopen = () => {
      ws.send(
        JSON.stringify({
          event: 'session_start',
          session_id: this.sessionId,
          customer_phone: 'softphone',
          direction: 'inbound',
          started_at: new Date().toISOString(),
          media: { codec: 'slin', sample_rate: RATE, encoding: 'binary' },
        }),
      );
      this.node.port.postMessage({ type: 'start' });
      this.on.state(`In a call (${this.sessionId})`, true);
    };
    ws.onmessage = (e) => {
      if (typeof e.data === 'string') return this.fromBridge(JSON.parse(e.data));
      this.received.push(e.data);
      this.node.port.postMessage({ type: 'play', buf: e.data }, [e.data]);
    };
    ws.onclose = (e) => {
      if (e.code !== 1000 && e.code !== 1005) this.on.error(`The call ended: ${e.code} ${e.reason}`.trim());
      this.cleanup('Call ended');
    };
  }

  fromWorklet(m) {
    if (m.type === 'pcm') {
      const ws = this.ws;
      if (ws === undefined || ws.readyState !== WebSocket.OPEN) return;
      // A stalled socket gets fresh audio when it recovers, not a growing backlog.
      if (ws.bufferedAmount > MAX_BUFFERED_BYTES) this.skippedFrames++;
      else {
        ws.send(m.buf);
        this.sentFrames++;
      }
    } else if (m.type === 'rtt') {
      // The sound card's own output latency is outside the audio graph: added, as the browser reports it.
      const ms = m.ms + ((this.ctx?.outputLatency ?? 0) + (this.ctx?.baseLatency ?? 0)) * 1000;
      this.rtts.push(ms);
      this.on.rtt(ms);
    } else if (m.type === 'levels') this.on.levels(m);
  }

  fromBridge(ev) {
    if (ev.event === 'error') this.on.error(`The bridge reported ${ev.code}: ${ev.message}`);
    else if (ev.event === 'session_end') this.ws?.close(1000);
  }

  dtmf(digit) {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ event: 'dtmf', digit }));
  }

  hangUp() {
    const ws = this.ws;
    if (ws === undefined) return;
    this.node?.port.postMessage({ type: 'stop' });
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ event: 'session_end', reason: 'hangup' }));
    // The bridge closes with 1000 once it has flushed; a bridge that does not gets closed after 2 s.
    setTimeout(() => ws.readyState === WebSocket.OPEN && ws.close(1000), 2000);
  }

  cleanup(text) {
    for (const t of this.stream?.getTracks() ?? []) t.stop();
    this.ctx?.close();
    this.ws = undefined;
    this.stream = undefined;
    this.ctx = undefined;
    this.node = undefined;
    this.on.state(text, false);
  }
}
