// Builds the WebAssembly DSP kernels from their AssemblyScript sources. Runs on `npm ci` (prepare) and
// at the end of `npm run build`. The kernel source is `.as` so tsc and Biome leave it alone; asc only
// reads `.ts` entries, so it is handed over through asc's readFile hook.
//
// Output goes beside the source (src/audio/wasm/, for tsx and vitest running TypeScript) and to
// dist/audio/wasm/ (for the compiled bridge): resampler-wasm.ts resolves `./wasm/resampler.wasm`
// relative to itself, which is one of the two in either case.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const kernels = [{ source: 'src/audio/wasm/resampler.as', name: 'resampler' }];

let asc;
try {
  asc = (await import('assemblyscript/asc')).default;
} catch {
  // A production install without devDependencies: the bridge falls back to its pure-JS kernels.
  console.warn('build-wasm: assemblyscript is not installed; skipping (the pure-JS fallback will be used)');
  process.exit(0);
}

for (const { source, name } of kernels) {
  const entry = `${name}.ts`;
  const text = readFileSync(join(root, source), 'utf8');
  let binary;
  const { error, stderr } = await asc.main(
    [entry, '--outFile', `${name}.wasm`, '-O3', '--noAssert', '--runtime', 'stub', '--enable', 'simd'],
    {
      readFile: (file) => (file === entry ? text : null),
      writeFile: (file, contents) => {
        if (file.endsWith('.wasm')) binary = contents;
      },
      listFiles: () => [],
    },
  );
  if (error || binary === undefined) {
    console.error(stderr.toString());
    console.error(`build-wasm: ${source} failed: ${error?.message ?? 'no output'}`);
    process.exit(1);
  }
  for (const dir of ['src/audio/wasm', 'dist/audio/wasm']) {
    mkdirSync(join(root, dir), { recursive: true });
    writeFileSync(join(root, dir, `${name}.wasm`), binary);
  }
  console.log(`build-wasm: ${source} -> ${name}.wasm (${binary.length} bytes)`);
}
