import { defineConfig } from 'vitest/config';

/** Tests that start several bridge processes and a Redis each. */
const MULTI_PROCESS = ['test/state/cluster.test.ts', 'test/state/cluster-cli.test.ts'];
/**
 * Fault tests that load the machine: 100 live calls each, or a peer flooding a bridge from a process of
 * its own (their load would skew other files' timing checks, and others' load their control call's).
 */
const LOADING_FAULTS = [
  'test/faults/worker-crash.test.ts',
  'test/faults/sigterm-100.test.ts',
  'test/faults/provider-faults.test.ts',
];
/**
 * Tests that assert real-time pacing bounds (chunk inter-arrival p99 <= 25 ms, or no frame later than its
 * turn), judging a bridge in a process of their own: on two cores, other test files running beside them
 * took the p99 to 26 ms in a full run, so they run alone, after the rest.
 */
const REAL_TIME = [
  'test/media/audio-path.test.ts',
  'test/media/bot-dialects.test.ts',
  'test/media/bot-elevenlabs-agent-timing.test.ts',
  'test/media/bot-deepgram-agent-timing.test.ts',
  'test/media/bot-ultravox-timing.test.ts',
  'test/media/bot-gemini-live-timing.test.ts',
  'test/media/bot-frameworks.test.ts',
  'test/media/provider-twilio.test.ts',
  'test/media/provider-telnyx.test.ts',
  'test/media/provider-plivo.test.ts',
  'test/media/provider-exotel.test.ts',
  'test/media/provider-vonage.test.ts',
  'test/media/provider-jambonz.test.ts',
  'test/media/provider-asterisk.test.ts',
  'test/media/provider-audiosocket.test.ts',
  'test/media/dialect-matrix.test.ts',
];

/** The console in a real browser: one chromium, and a round-trip bound that other files' load would skew. */
const BROWSER = ['test/console/browser.test.ts'];

export default defineConfig({
  test: {
    // Real servers and real-time pacing: generous per-test bounds, no retries that could hide flakes.
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          exclude: [...MULTI_PROCESS, ...LOADING_FAULTS, ...REAL_TIME, ...BROWSER],
          sequence: { groupOrder: 0 },
        },
      },
      {
        // After the rest, one file at a time: their processes' CPU would skew the real-time timing tests.
        extends: true,
        test: {
          name: 'multi-process',
          include: [...MULTI_PROCESS, ...LOADING_FAULTS, ...REAL_TIME, ...BROWSER],
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
