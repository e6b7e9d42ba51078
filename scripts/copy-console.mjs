// Copies the console page (src/console/: HTML, CSS and plain ES modules, no build step of their own)
// beside the compiled bridge, dist/console/, where src/control/console.ts finds it. Run by `npm run build`.
import { cpSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
rmSync(join(root, 'dist/console'), { recursive: true, force: true });
cpSync(join(root, 'src/console'), join(root, 'dist/console'), { recursive: true });
console.log('copy-console: src/console -> dist/console');
