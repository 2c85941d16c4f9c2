/**
 * Calls a function of the app's that runs where nothing catches it: inside
 * busboy's events (multer's `fileFilter`, `streamHandler`, a storage
 * engine's methods), where a library catches a throw but no rejection
 * (multer's `limits` function), or wherever an adapter logs (Express's
 * `log`, Fastify's logger). A throw, or a rejection of the promise an async
 * one returns, goes to `onFailed`: uncaught, it would crash the process and
 * leave the request waiting for a callback or a body that never comes. A
 * falsy error (`throw undefined`) becomes an Error, so it fails the request
 * instead of reading as success. Returns what `call` returned (`undefined`
 * after a throw).
 */
export function callCatching(call: () => unknown, onFailed: (error: Error) => void): unknown {
  const fail = (error: unknown) =>
    onFailed((error || new Error('pathgate: an option failed without an error')) as Error);
  try {
    const returned = call();
    const then = (returned as { then?: unknown } | null | undefined)?.then;
    if (typeof then === 'function')
      (then as PromiseLike<unknown>['then']).call(returned, undefined, fail);
    return returned;
  } catch (error) {
    fail(error);
    return undefined;
  }
}
