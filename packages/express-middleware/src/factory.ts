import {
  compileRouteGuard,
  type FsAccessMode,
  optionError,
  type PathSpec,
  type PermissionPolicy,
  requiredParams,
} from '@pathgate/core';
import type { StorageEngine } from 'multer';
import { type PathgateHandler, routeMiddleware } from './middleware.js';
import { createMulter, type PathgateMulter } from './multer.js';
import type { PathgateMulterOptions } from './multer-options.js';
import { misconfiguredOnce, type PathgateOptions, readOptions } from './options.js';
import { makeDeny } from './reply.js';
import { valuesReader } from './route-values.js';
import { type DiskStorageOptions, safeDiskStorage } from './storage.js';

/** What `pathgate(options)` returns: per-route middleware makers sharing one policy. */
export interface Pathgate {
  /** The compiled policy. */
  readonly policy: PermissionPolicy;
  /** Route-level middleware checking each spec's paths for reading. */
  read(...paths: PathSpec[]): PathgateHandler;
  /** Route-level middleware checking each spec's paths for writing. */
  write(...paths: PathSpec[]): PathgateHandler;
  /** A multer instance whose middleware refuse denied filenames before a byte is stored. */
  multer(options?: PathgateMulterOptions): PathgateMulter;
  /** The storage `multer()` uses by default: writes to `file.pathgatePath`, no symlinks, no overwrite. */
  diskStorage(options?: DiskStorageOptions): StorageEngine;
}

/**
 * Builds the policy once (bad options throw a TypeError naming the option)
 * and returns the gate. A route's specs are checked when `read()` or
 * `write()` is called, never per request; so is which request parts they read.
 */
export function pathgate(options: PathgateOptions): Pathgate {
  const settings = readOptions(options);
  const { policy } = settings;
  const deny = makeDeny(settings);
  let routes = 0;
  const route =
    (mode: FsAccessMode) =>
    (...paths: PathSpec[]): PathgateHandler => {
      routes += 1;
      if (paths.length === 0) optionError(`gate.${mode}() #${routes} needs at least one path spec`);
      const guard = compileRouteGuard(policy, { mode, paths }, `gate.${mode}() #${routes}`, {
        paramSegments: true,
      });
      const values = valuesReader(paths);
      return routeMiddleware({ guard, values, deny, settings, params: requiredParams(paths) });
    };
  const ungated = misconfiguredOnce(settings);
  const diskStorage = (storageOptions?: DiskStorageOptions) =>
    safeDiskStorage(policy.root, storageOptions, ungated);
  return {
    policy,
    read: route('read'),
    write: route('write'),
    multer: (multerOptions) => createMulter(settings, deny, diskStorage, multerOptions),
    diskStorage,
  };
}
