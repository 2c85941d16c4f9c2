import type { Request } from 'express';

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

/**
 * Destroys the request if its connection closes before its body ended, as
 * Node itself does only while the response is open. Once a deny went out
 * with the body still arriving, a client that hangs up (or the lingering
 * close giving up on it) leaves the request neither ended nor closed for
 * good, and multer's abort, which waits for one of the two, would never
 * call back: the request's folders stayed held (`hold`) in module-wide
 * maps. Returns the function that stops watching, called with multer's
 * callback: a kept-alive connection carries later requests.
 */
export function closeWithConnection(req: Request): () => void {
  const { socket } = req;
  if (!socket) return () => {};
  const closed = () => {
    if (!req.complete && !req.destroyed) req.destroy();
  };
  socket.once('close', closed);
  return () => socket.off('close', closed);
}
