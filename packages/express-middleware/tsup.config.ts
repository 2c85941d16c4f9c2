import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base.js';

// `import.meta.url` (for loading the optional multer peer) in the CJS build
// too, from a shim of ours: tsup's own (`shims: true`) is injected by its
// absolute path, which esbuild reads as a glob when a clone's path holds a
// `*`, and it spells the URL `file:${__filename}`, wrong for a `#` or a `%`.
export default defineConfig({
  ...packageBuild,
  esbuildOptions(options, { format }) {
    if (format !== 'cjs') return;
    options.define = { ...options.define, 'import.meta.url': 'importMetaUrl' };
    options.inject = [...(options.inject ?? []), './src/cjs-shim.ts'];
  },
});
