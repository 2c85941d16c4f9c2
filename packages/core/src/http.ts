// `@pathgate/core/http`: Node HTTP helpers the adapters share (kept out of the main, I/O-free entry).
export type {
  LingeringRequest,
  LingeringSocket,
  LingeringStream,
  LingerOptions,
  PendingRequest,
} from './linger.js';
export { bodyPending, DEFAULT_LINGER_BYTES, DEFAULT_LINGER_MS, lingerClose } from './linger.js';
