// "Listen": a live call's audio from GET /v1/sessions/{id}/listen (caller and bot mixed, or one leg),
// PCM16 at the caller's rate, played through the worklet's jitter buffer.
import { RecentAudio } from './measure.js';
import { audioGraph } from './softphone.js';

export class Listener {
  /** `on`: state(text, live), error(message). */
  constructor(api, sessionId, leg, on) {
    this.api = api;
    this.sessionId = sessionId;
    this.leg = leg;
    this.on = on;
    this.received = undefined;
    this.ctx = undefined;
    this.node = undefined;
    this.pending = [];
    this.frames = 0;
    const ws = new WebSocket(api.wsUrl(`/v1/sessions/${encodeURIComponent(sessionId)}/listen`, { leg }));
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    on.state('Connecting…', true);
    ws.onmessage = (e) => {
      if (typeof e.data === 'string') return this.control(JSON.parse(e.data));
      this.frames++;
      this.received?.push(e.data);
      if (this.node === undefined) this.pending.push(e.data);
      else this.node.port.postMessage({ type: 'play', buf: e.data }, [e.data]);
    };
    ws.onclose = (e) => {
      if (e.code !== 1000) {
        if (this.rate === undefined) this.why();
        else on.error(`Listen-in closed: ${e.code} ${e.reason}`.trim());
      }
      this.stop();
    };
  }

  /**
   * A browser does not tell a page why a WebSocket upgrade was refused: the same route over plain HTTP
   * answers with the bridge's reason (401, 403, 404), or 426 when only the upgrade was missing.
   */
  async why() {
    const path = `/v1/sessions/${encodeURIComponent(this.sessionId)}/listen?leg=${this.leg}`;
    try {
      await this.api.json('GET', path);
    } catch (err) {
      if (err.status !== 426) return this.on.error(`Listen-in refused: ${err.message}`);
    }
    this.on.error('Listen-in failed: the WebSocket could not be opened');
  }

  async control(m) {
    if (m.event !== 'listen_start') return;
    this.rate = m.sample_rate;
    this.received = new RecentAudio(m.sample_rate, 4);
    this.ctx = await audioGraph(m.sample_rate);
    const node = new AudioWorkletNode(this.ctx, 'pcm-bridge', {
      numberOfInputs: 0,
      numberOfOutputs: 1,
      outputChannelCount: [1],
      processorOptions: { prefillMs: 80, maxQueueMs: 400 },
    });
    node.connect(this.ctx.destination);
    this.node = node;
    for (const buf of this.pending.splice(0)) node.port.postMessage({ type: 'play', buf }, [buf]);
    this.on.state(`Listening (${m.leg}, ${m.sample_rate} Hz)`, true);
  }

  stop() {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING)
      this.ws.close(1000);
    this.ctx?.close();
    this.ctx = undefined;
    this.node = undefined;
    this.on.state('', false);
  }
}
