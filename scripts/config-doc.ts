/** `npm run docs:config`: writes docs/configuration.md from the configuration table (src/config/spec.ts). */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderConfigDoc } from '../src/config/doc.js';

const out = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));
writeFileSync(out, renderConfigDoc());
console.log(`wrote ${out}`);
