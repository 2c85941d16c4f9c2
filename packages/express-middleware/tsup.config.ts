import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base.js';

export default defineConfig({
  ...packageBuild,
  // `import.meta.url` (for loading the optional multer peer) in the CJS build too.
  shims: true,
});
