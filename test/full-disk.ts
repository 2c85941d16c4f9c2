// Preloaded into an example by a test: the disk is full for the sandbox it
// makes, so seeding it fails (ENOSPC) once its folder is made.
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const writeFileSync = fs.writeFileSync;
fs.writeFileSync = function fullDisk(file: fs.PathOrFileDescriptor, ...rest: unknown[]) {
  if (String(file).includes('pathgate-example-')) {
    throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  }
  return Reflect.apply(writeFileSync, fs, [file, ...rest]);
} as typeof writeFileSync;
syncBuiltinESMExports();
