/**
 * Preloaded by the capacity benches into the server under test (`node --require bench/thread-tag.cjs`):
 * each worker thread names itself `worker-<threadId>` (its /proc comm), so the benches can tell the
 * bridge's DSP workers from the main thread and V8's own threads when they read per-thread CPU
 * (src/load/thread-cpu.ts). It does nothing on the main thread. Node runs --require modules in every
 * worker too.
 */
const { isMainThread, threadId } = require('node:worker_threads');
const { writeFileSync } = require('node:fs');

if (!isMainThread) {
  try {
    writeFileSync('/proc/thread-self/comm', `worker-${threadId}`);
  } catch {
    // not Linux: the thread keeps its name
  }
}
