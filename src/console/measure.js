// Measurements the page makes of the audio it receives: a tone's SNR (the fit the bridge's own tests
// use, src/audio/tone.ts, in plain JS) and a bounded store of the last seconds of received PCM16.

/** Least-squares fit of a·cos + b·sin + c at `hz`: the tone's power over the residual's, in dB. */
export function fitToneSnrDb(x, hz, rate) {
  const n = x.length;
  if (n === 0) return Number.NEGATIVE_INFINITY;
  const w = (2 * Math.PI * hz) / rate;
  let cc = 0;
  let ss = 0;
  let cs = 0;
  let c1 = 0;
  let s1 = 0;
  let xc = 0;
  let xs = 0;
  let x1 = 0;
  for (let i = 0; i < n; i++) {
    const c = Math.cos(w * i);
    const s = Math.sin(w * i);
    const v = x[i];
    cc += c * c;
    ss += s * s;
    cs += c * s;
    c1 += c;
    s1 += s;
    xc += v * c;
    xs += v * s;
    x1 += v;
  }
  const [a, b, d] = solve3(
    [
      [cc, cs, c1],
      [cs, ss, s1],
      [c1, s1, n],
    ],
    [xc, xs, x1],
  );
  let sig = 0;
  let res = 0;
  for (let i = 0; i < n; i++) {
    const t = a * Math.cos(w * i) + b * Math.sin(w * i);
    const r = x[i] - t - d;
    sig += t * t;
    res += r * r;
  }
  // No tone at all (silence, or far below it): no SNR to speak of.
  if (sig / n < MIN_TONE_POWER) return Number.NEGATIVE_INFINITY;
  return res === 0 ? Number.POSITIVE_INFINITY : 10 * Math.log10(sig / res);
}

/** A fitted tone quieter than -60 dBFS does not count as one. */
const MIN_TONE_POWER = 32768 ** 2 * 1e-6;

function solve3(m, y) {
  const a = m.map((row, i) => [...row, y[i]]);
  for (let col = 0; col < 3; col++) {
    let piv = col;
    for (let r = col + 1; r < 3; r++) if (Math.abs(a[r][col]) > Math.abs(a[piv][col])) piv = r;
    if (!(Math.abs(a[piv][col]) > 1e-12)) return [0, 0, 0];
    [a[col], a[piv]] = [a[piv], a[col]];
    for (let r = 0; r < 3; r++) {
      if (r === col) continue;
      const f = a[r][col] / a[col][col];
      for (let c = col; c < 4; c++) a[r][c] -= f * a[col][c];
    }
  }
  return [a[0][3] / a[0][0], a[1][3] / a[1][1], a[2][3] / a[2][2]];
}

/**
 * The best SNR of the tone over any `windowMs` stretch of `x` (stepping 20 ms): the tone as it was
 * heard during a burst, where bursts alternate with silence. Gaps, clicks and phase jumps inside the
 * window all count as noise.
 */
export function bestToneSnrDb(x, hz, rate, windowMs = 400) {
  const win = Math.round((rate * windowMs) / 1000);
  const step = Math.round(rate / 50);
  let best = Number.NEGATIVE_INFINITY;
  for (let at = 0; at + win <= x.length; at += step) {
    const snr = fitToneSnrDb(x.subarray(at, at + win), hz, rate);
    if (snr > best) best = snr;
  }
  return best;
}

/** The last `seconds` of PCM16 received, kept as the frames came (a bounded list of small copies). */
export class RecentAudio {
  constructor(rate, seconds = 3) {
    this.rate = rate;
    this.limit = rate * seconds;
    this.frames = [];
    this.samples = 0;
  }
  push(buf) {
    const f = new Int16Array(buf.slice(0));
    this.frames.push(f);
    this.samples += f.length;
    while (this.samples - this.frames[0].length >= this.limit) this.samples -= this.frames.shift().length;
  }
  /** The kept audio as one Int16Array. */
  samplesNow() {
    const out = new Int16Array(this.samples);
    let at = 0;
    for (const f of this.frames) {
      out.set(f, at);
      at += f.length;
    }
    return out;
  }
  toneSnrDb(hz) {
    return bestToneSnrDb(this.samplesNow(), hz, this.rate);
  }
}
