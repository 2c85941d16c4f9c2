import { defineConfig } from 'tsup';

// Two builds run side by side, so neither cleans: the build script empties dist first.

export default defineConfig([
  {
    entry: ['src/index.ts', 'src/http.ts'],
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    target: 'node20',
  },
  {
    // The `pathgate` bin: one ESM file, its shebang kept by tsup.
    entry: { cli: 'src/cli/main.ts' },
    format: ['esm'],
    sourcemap: true,
    target: 'node20',
  },
]);
