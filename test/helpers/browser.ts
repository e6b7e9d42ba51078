/**
 * Debian's chromium driven by playwright-core for the console's browser tests: found at CHROMIUM_PATH or
 * /usr/bin/chromium (scripts/install-test-deps.sh installs it), launched headless with the flags this
 * closed network needs (no background connections, no first-run or sync traffic), a fresh profile, and
 * Chromium's fake microphone fed a WAV file the test writes.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import wavefile from 'wavefile';
import { skipUnlessCI } from './needs.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why `file`'s browser tests cannot run here, or undefined when they can; in CI a missing browser throws. */
export function browserSkipReason(file: string): string | undefined {
  if (existsSync(CHROMIUM)) return undefined;
  return skipUnlessCI(
    file,
    `no chromium at ${CHROMIUM}: install it with scripts/install-test-deps.sh (or set CHROMIUM_PATH)`,
  );
}

/**
 * A WAV of `hz` tone bursts: `onMs` of tone at `amplitude` (fraction of full scale), `offMs` of silence,
 * `bursts` times, 48 kHz mono PCM16 (Chromium loops it as the microphone).
 */
export function toneBurstWav(
  path: string,
  o: { hz: number; onMs: number; offMs: number; bursts: number; amplitude: number },
): void {
  const rate = 48_000;
  const on = Math.round((rate * o.onMs) / 1000);
  const period = on + Math.round((rate * o.offMs) / 1000);
  const samples = new Int16Array(period * o.bursts);
  for (let b = 0; b < o.bursts; b++) {
    for (let i = 0; i < on; i++) {
      // 5 ms ramps: no click at the edges of a burst.
      const ramp = Math.min(1, i / (rate * 0.005), (on - i) / (rate * 0.005));
      samples[b * period + i] = Math.round(
        32767 * o.amplitude * ramp * Math.sin((2 * Math.PI * o.hz * i) / rate),
      );
    }
  }
  const wav = new wavefile.WaveFile();
  wav.fromScratch(1, rate, '16', samples);
  writeFileSync(path, wav.toBuffer());
}

export interface TestBrowser extends AsyncDisposable {
  readonly browser: Browser;
  readonly dir: string;
  close(): Promise<void>;
}

/** Chromium with a fresh profile and the fake microphone playing `wavPath`. */
export async function launchBrowser(wavPath: string): Promise<TestBrowser> {
  const dir = mkdtempSync(join(tmpdir(), 'voicebridge-chromium-'));
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Headless, and a new empty profile per launch, are playwright's own (it refuses --user-data-dir here).
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${wavPath}`,
      '--autoplay-policy=no-user-gesture-required',
    ],
  });
  const close = async () => {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { browser, dir, close, [Symbol.asyncDispose]: close };
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}
