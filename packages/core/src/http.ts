// `@pathgate/core/http`: Node HTTP helpers the adapters share (kept out of the main entry, which holds no HTTP or socket code).
export type {
  ClosingResponse,
  LingeringRequest,
  LingeringSocket,
  LingeringStream,
  LingerOptions,
  PendingRequest,
} from './linger.js';
export {
  bodyPending,
  closeWithAnswer,
  DEFAULT_LINGER_BYTES,
  DEFAULT_LINGER_MS,
  framesNoBody,
  lingerClose,
} from './linger.js';
