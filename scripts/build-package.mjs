// Builds the package in the current folder from its tsup.config.ts, as `tsup`
// does, but loads that config through tsx: tsup's own loader hands the
// config's absolute path to esbuild as an entry point, which reads a `*` in it
// as a glob, so a clone in a folder named with `*` could not build ("Must use
// "outdir" when there are multiple input files").
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'tsup';
import { tsImport } from 'tsx/esm/api';

const file = pathToFileURL(resolve('tsup.config.ts')).href;
const { default: config } = await tsImport(file, import.meta.url);
await Promise.all([config].flat().map((options) => build({ ...options, config: false })));
