import { pathgate } from './factory.js';

export type {
  CheckedFile,
  GuardDenyReason,
  PathDenial,
  PathgateInfo,
  PathSpec,
} from '@pathgate/core';
export type {
  ExpressPathgateInfo,
  PathgateFileFields,
  PathgateRequestFields,
} from './augment.js';
export type { StorageCode } from './errors.js';
export { PathgateDeniedError, PathgateStorageError, STORAGE_CODES } from './errors.js';
export type { Pathgate } from './factory.js';
export type { PathgateHandler } from './middleware.js';
export type { PathgateMulter } from './multer.js';
export type { PathgateMulterOptions } from './multer-options.js';
export type {
  DenyHandler,
  DenyHandling,
  PathgateLogEntry,
  PathgateOptions,
  PathgatePolicyOptions,
  PathgateRuleOptions,
} from './options.js';
export type { DiskStorageOptions } from './storage.js';
export { pathgate };
export default pathgate;
