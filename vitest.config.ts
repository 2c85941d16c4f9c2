import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (pkg: string, file = 'index') =>
  fileURLToPath(new URL(`./packages/${pkg}/src/${file}.ts`, import.meta.url));

// Tests import the workspace packages from source; the packaging test imports the builds.
// The subpath comes first: an alias also matches `<key>/…`, so '@pathgate/core' alone
// would turn '@pathgate/core/http' into '…/src/index.ts/http'.
const alias = {
  '@pathgate/core/http': src('core', 'http'),
  '@pathgate/core': src('core'),
  '@pathgate/express': src('express-middleware'),
  '@pathgate/fastify': src('fastify-plugin'),
};

export default defineConfig({
  resolve: { alias },
  test: {
    projects: [
      { resolve: { alias }, test: { name: 'core', include: ['packages/core/test/**/*.test.ts'] } },
      {
        resolve: { alias },
        test: { name: 'fastify', include: ['packages/fastify-plugin/test/**/*.test.ts'] },
      },
      {
        resolve: { alias },
        test: { name: 'express', include: ['packages/express-middleware/test/**/*.test.ts'] },
      },
      { resolve: { alias }, test: { name: 'e2e', include: ['test/**/*.test.ts'] } },
    ],
  },
});
