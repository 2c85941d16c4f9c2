import { copyFile } from 'node:fs/promises';
import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base.js';

// The builds run side by side, so none cleans: the build script empties dist first.
const build = { ...packageBuild, clean: false };

export default defineConfig([
  { ...build, format: ['esm'] },
  // require() returns the plugin itself (src/index.cts). Its types are the
  // hand-written src/index.d.cts (the types bundler cannot write `export =`)
  // over api.d.cts, the exports' types bundled as for CommonJS.
  {
    ...build,
    entry: { index: 'src/index.cts' },
    format: ['cjs'],
    dts: false,
    onSuccess: () => copyFile('src/index.d.cts', 'dist/index.d.cts'),
  },
  { ...build, entry: { api: 'src/index.ts' }, format: ['cjs'], dts: { only: true } },
]);
