import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Real servers and real-time pacing: generous per-test bounds, no retries that could hide flakes.
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
