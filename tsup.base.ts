import type { Options } from 'tsup';

/** The build the adapter packages share: ESM, CJS and types, for Node 20. */
export const packageBuild: Options = {
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
};
