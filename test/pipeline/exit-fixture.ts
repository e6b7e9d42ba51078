/**
 * Run by pipeline.test.ts in a child process: opens a worker pipeline, processes audio, closes it while
 * a session is still open, and then must exit by itself (no handle left keeping the event loop alive).
 */
import { createPipeline } from '../../src/pipeline/index.js';

const pipeline = createPipeline({ workers: 2 });
let chunks = 0;
const session = pipeline.open(
  {
    callerIn: { codec: 'pcmu', sampleRate: 8000 },
    callerOut: { codec: 'pcmu', sampleRate: 8000 },
    botRate: 16000,
  },
  {
    toBot: () => {
      chunks++;
    },
    toCaller: () => {
      chunks++;
    },
  },
);
session.fromCaller(new Uint8Array(160));
session.fromBot(new Uint8Array(640));
const deadline = Date.now() + 10_000;
while (chunks < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
console.log(`fixture: processed ${chunks} chunks`);
await pipeline.close();
