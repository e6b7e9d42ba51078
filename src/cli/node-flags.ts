/**
 * The V8 flags the bridge runs with, wherever the project starts it: `npm start`, the Dockerfile, the
 * cluster launcher and the benches (test/node-flags.test.ts keeps package.json and the Dockerfile in
 * step with this list).
 *
 * `--max-semi-space-size=4`: a 4 MB young-generation semi-space instead of V8's 16 MB. The bridge makes
 * many short-lived objects per frame (sockets' reads and writes above all), and with the default the
 * young generation grows to match: at 500 calls RSS per live call was ~103 KB with it and ~81 KB with
 * 4 MB (three runs each, 05:55 UTC), for the same CPU per call-second (medians 1.84 and 1.85 ms, within
 * this machine's ±10 % noise) and the same round-trip p99. bench/README.md has the figures.
 */
export const BRIDGE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];
