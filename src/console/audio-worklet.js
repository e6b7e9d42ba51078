// The console's one AudioWorklet processor, run on the audio thread, at the context's rate (the page
// makes the context at the rate of the call: 16 kHz for the softphone, the caller's rate for listen-in).
//
// - Capture (when an input is connected and `start` was posted): the microphone as PCM16 in 20 ms
//   frames, posted to the page (transferred, not copied) to go out on the WebSocket.
// - Playback: PCM16 frames from the page into a ring, played through a small jitter buffer: nothing
//   plays until `prefill` is queued, an underrun goes back to filling, and a queue past `maxQueue`
//   drops its oldest audio down to `prefill` (a late burst must not grow the delay for good). Below
//   that cap, audio that sat in the queue unused for a whole second (the queue never ran below it) is
//   dropped too, down to `prefill`: the delay a burst added goes away once the stream is steady again.
// - Round trip: an onset in what goes out (silence, then sound) starts a clock on the audio thread's
//   own frame counter; the next onset in what plays stops it. Both ends are in this one processor, so
//   the figure is exact to the render quantum: capture framing, the network, the bridge, the bot, the
//   jitter buffer. The sound card's own latency is reported by the page beside it.
// - Levels: dBFS of what goes out and what plays, a few times a second.

const FRAME_MS = 20;
/** Louder than this after silence is an onset; quieter than SILENT_DB for HOLD_MS is silence again. */
const ONSET_DB = -35;
const SILENT_DB = -45;
const HOLD_MS = 120;
const LEVEL_EVERY_MS = 125;
const MAX_WAIT_S = 3;

function dbfs(sumSquares, n) {
  if (n === 0 || sumSquares === 0) return null;
  return 10 * Math.log10(sumSquares / n);
}

/** Silence/sound with hysteresis; `update` answers true at an onset. */
class OnsetDetector {
  constructor(rate) {
    this.loud = false;
    this.quietFrames = 0;
    this.holdFrames = Math.round((rate * HOLD_MS) / 1000);
  }
  update(db, frames) {
    if (db !== null && db > ONSET_DB) {
      this.quietFrames = 0;
      if (!this.loud) {
        this.loud = true;
        return true;
      }
    } else if (db === null || db < SILENT_DB) {
      this.quietFrames += frames;
      if (this.quietFrames >= this.holdFrames) this.loud = false;
    }
    return false;
  }
}

class PcmBridge extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const o = options.processorOptions ?? {};
    const rate = sampleRate;
    this.capturing = false;
    this.frame = new Int16Array(Math.round((rate * FRAME_MS) / 1000));
    this.frameFill = 0;
    this.ring = new Float32Array(rate * 2);
    this.readAt = 0;
    this.queued = 0;
    this.prefill = Math.round((rate * (o.prefillMs ?? 40)) / 1000);
    this.maxQueue = Math.round((rate * (o.maxQueueMs ?? 200)) / 1000);
    this.playing = false;
    /** Times the queue ran dry while playing (the end of each burst of the far end's audio counts too). */
    this.underruns = 0;
    this.droppedFrames = 0;
    this.outOnset = new OnsetDetector(rate);
    this.inOnset = new OnsetDetector(rate);
    this.pendingOnset = -1;
    this.micSum = 0;
    this.spkSum = 0;
    this.levelFrames = 0;
    this.levelEvery = Math.round((rate * LEVEL_EVERY_MS) / 1000);
    this.port.onmessage = (e) => this.onMessage(e.data);
  }

  onMessage(m) {
    if (m.type === 'play') this.enqueue(new Int16Array(m.buf));
    else if (m.type === 'start') this.capturing = true;
    else if (m.type === 'stop') this.capturing = false;
  }

  enqueue(pcm) {
    const ring = this.ring;
    const cap = ring.length;
    if (this.queued + pcm.length > cap) this.drop(this.queued + pcm.length - cap);
    let w = (this.readAt + this.queued) % cap;
    for (let i = 0; i < pcm.length; i++) {
      ring[w] = pcm[i] / 32768;
      w = w + 1 === cap ? 0 : w + 1;
    }
    this.queued += pcm.length;
    if (this.playing && this.queued > this.maxQueue) this.drop(this.queued - this.prefill);
  }

  drop(n) {
    this.readAt = (this.readAt + n) % this.ring.length;
    this.queued -= n;
    this.droppedFrames += n;
  }

  process(inputs, outputs) {
    const mic = inputs[0]?.[0];
    const out = outputs[0]?.[0];
    const n = out?.length ?? mic?.length ?? 128;
    let micSum = 0;
    if (mic !== undefined) {
      for (let i = 0; i < mic.length; i++) micSum += mic[i] * mic[i];
      if (this.capturing) {
        const started = this.outOnset.update(dbfs(micSum, mic.length), mic.length);
        // An onset with no answer within MAX_WAIT_S is forgotten, so the next one starts afresh.
        if (this.pendingOnset >= 0 && currentFrame - this.pendingOnset > sampleRate * MAX_WAIT_S)
          this.pendingOnset = -1;
        if (started && this.pendingOnset < 0) this.pendingOnset = currentFrame;
        this.capture(mic);
      }
    }
    let spkSum = 0;
    if (out !== undefined) {
      if (!this.playing && this.queued >= this.prefill) this.playing = true;
      if (this.playing && this.queued < n) {
        this.playing = false;
        this.underruns++;
      }
      if (this.playing) {
        const ring = this.ring;
        const cap = ring.length;
        let r = this.readAt;
        for (let i = 0; i < n; i++) {
          const v = ring[r];
          out[i] = v;
          spkSum += v * v;
          r = r + 1 === cap ? 0 : r + 1;
        }
        this.readAt = r;
        this.queued -= n;
        this.trim(n);
      } else {
        out.fill(0);
      }
      const heard = this.inOnset.update(dbfs(spkSum, n), n);
      if (heard && this.pendingOnset >= 0) {
        this.port.postMessage({ type: 'rtt', ms: ((currentFrame - this.pendingOnset) * 1000) / sampleRate });
        this.pendingOnset = -1;
      }
    }
    this.level(micSum, spkSum, n);
    return true;
  }

  /** Drops what the queue held unused for a whole second, beyond `prefill`. */
  trim(n) {
    if (this.queued < this.minQueued) this.minQueued = this.queued;
    this.windowFrames += n;
    if (this.windowFrames < sampleRate) return;
    const excess = this.minQueued - this.prefill;
    if (excess >= n) this.drop(excess);
    this.windowFrames = 0;
    this.minQueued = Number.POSITIVE_INFINITY;
  }

  capture(mic) {
    let frame = this.frame;
    let fill = this.frameFill;
    const size = frame.length;
    for (let i = 0; i < mic.length; i++) {
      const v = Math.max(-1, Math.min(1, mic[i]));
      frame[fill++] = v < 0 ? v * 32768 : v * 32767;
      if (fill === size) {
        // Transferred, not copied: the buffer is the page's now, and this side starts a new one.
        this.port.postMessage({ type: 'pcm', buf: frame.buffer }, [frame.buffer]);
        frame = new Int16Array(size);
        fill = 0;
      }
    }
    this.frame = frame;
    this.frameFill = fill;
  }

  level(micSum, spkSum, n) {
    this.micSum += micSum;
    this.spkSum += spkSum;
    this.levelFrames += n;
    if (this.levelFrames < this.levelEvery) return;
    this.port.postMessage({
      type: 'levels',
      mic: dbfs(this.micSum, this.levelFrames),
      speaker: dbfs(this.spkSum, this.levelFrames),
      queuedMs: (this.queued * 1000) / sampleRate,
      underruns: this.underruns,
      droppedMs: (this.droppedFrames * 1000) / sampleRate,
    });
    this.micSum = 0;
    this.spkSum = 0;
    this.levelFrames = 0;
  }
}

registerProcessor('pcm-bridge', PcmBridge);
