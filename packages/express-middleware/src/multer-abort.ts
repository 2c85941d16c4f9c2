/**
 * Calls `removed` once multer has removed what it stored for the request it
 * aborts with `error`. multer sets `storageErrors` on its abort error right
 * after its last removal (every 2.x version): the one moment to learn it, as
 * its callback may wait for the rest of the body (2.5 drains it first).
 */
export function onceRemoved<E extends Error>(error: E, removed: () => void): E {
  // Set only: the error never reaches the app, which alone would read the value.
  Object.defineProperty(error, 'storageErrors', { configurable: true, set: () => removed() });
  return error;
}
