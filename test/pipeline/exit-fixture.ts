/**
 * Run by pipeline.test.ts in a child process: opens a worker pipeline, processes audio, closes it while
 * legs are still open, and then must exit by itself (no handle left keeping the event loop alive).
 */
import { createPipeline } from '../../src/pipeline/index.js';
import { waitFor } from '../helpers/wait.js';

const pipeline = createPipeline({ workers: 2 });
let chunks = 0;
const sink = {
  audio: () => {
    chunks++;
  },
  marker: () => {},
  reset: () => {},
  gap: () => {},
};
const up = pipeline.open({ from: { codec: 'pcmu', rate: 8000 }, to: { codec: 'slin', rate: 16000 } }, sink);
const down = pipeline.open({ from: { codec: 'slin', rate: 16000 }, to: { codec: 'pcmu', rate: 8000 } }, sink);
up.push(new Uint8Array(160));
down.push(new Uint8Array(640));
await waitFor(() => chunks >= 2, 10_000, 'two chunks processed').catch(() => {});
console.log(`fixture: processed ${chunks} chunks`);
await pipeline.close();
