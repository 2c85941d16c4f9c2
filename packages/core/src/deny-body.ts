import { SAND_PERM_CODES } from './errors.js';
import type { GuardDenyReason, PathDenial } from './route-guard.js';

/**
 * The JSON both adapters send with a 403: Fastify's error shape plus the
 * reason. It names the spec that denied (`body.from`), never the value, the
 * canonical path or the root.
 */
export interface DenyBody {
  statusCode: 403;
  code: typeof SAND_PERM_CODES.DENIED;
  error: 'Forbidden';
  message: string;
  reason: GuardDenyReason;
}

export function denyBody(denial: PathDenial): DenyBody {
  return {
    statusCode: 403,
    code: SAND_PERM_CODES.DENIED,
    error: 'Forbidden',
    message: `${denial.label}: path denied (${denial.reason})`,
    reason: denial.reason,
  };
}

/** The fulfilment callback given to a returned thenable: its value is never a body. */
const ignore = (): void => {};

/**
 * A stream (a page to send, say) is no body: its JSON would be its
 * internals (a file stream's path). One the hook opened for it is let go,
 * or its file stays open, a descriptor per deny. Not a stream of the
 * exchange itself, which a chained call returns (`raw.setHeader(…)`,
 * `req.once(…)`, `socket.setNoDelay()`): the response, which writes; the
 * request, which has a socket; the socket, which writes.
 */
function refuseStream(returned: object): void {
  if (typeof (returned as { pipe?: unknown }).pipe !== 'function') return;
  destroyOpened(returned);
  throw new TypeError('a stream is no 403 body: send it from onDeny yourself');
}

/** Destroys a Node stream opened to be read: not the response, the request nor the socket. */
function destroyOpened(value: object): void {
  const stream = value as { read?: unknown; writable?: unknown; destroy?: unknown };
  const opened =
    typeof stream.read === 'function' && stream.writable !== true && !('socket' in stream);
  if (opened && typeof stream.destroy === 'function') stream.destroy();
}

/** The whole-buffer kinds `ArrayBuffer.isView` does not take, by their tag (it holds across realms). */
const BUFFER_TAGS = new Set(['[object ArrayBuffer]', '[object SharedArrayBuffer]']);

/**
 * Lets go of a stream no one will read (a fetch's body holds its
 * connection): a web one is cancelled (a locked one is its reader's:
 * cancel() rejects, and is ignored), a Node one destroyed. Not as
 * `destroyOpened` picks: node-fetch's body is a PassThrough, writable while
 * the response arrives; no chained call returns a Response, so only a
 * request or a response (their `socket`) wrapped in one is kept.
 */
function letGo(stream: unknown): void {
  if (typeof stream !== 'object' || stream === null) return;
  const { cancel, destroy } = stream as { cancel?: () => unknown; destroy?: () => unknown };
  if (typeof cancel === 'function') Promise.resolve(cancel.call(stream)).then(ignore, ignore);
  else if (typeof destroy === 'function' && !('socket' in stream)) destroy.call(stream);
}

/**
 * Bytes, a web `Response` or `Blob` (both have `arrayBuffer()`) and a web
 * `ReadableStream` are no body either: JSON writes a Buffer as
 * `{"type":"Buffer","data":[…]}`, the others as numbers or `{}`. The hook
 * meant to send them; a web stream, or a Response's body, is let go as
 * `refuseStream` lets go of a Node one.
 */
function refuseNonJson(returned: object): void {
  if (ArrayBuffer.isView(returned) || BUFFER_TAGS.has(Object.prototype.toString.call(returned)))
    throw new TypeError('bytes are no 403 body: send them from onDeny yourself');
  const web = returned as { getReader?: unknown; arrayBuffer?: unknown; body?: unknown };
  if (typeof web.getReader === 'function') {
    letGo(returned);
    throw new TypeError('a web stream is no 403 body: send it from onDeny yourself');
  }
  if (typeof web.arrayBuffer === 'function') {
    letGo(web.body);
    throw new TypeError('a Response or a Blob is no 403 body: send it from onDeny yourself');
  }
}

/**
 * An object JSON writes as `{}` that is not a plain object (of any realm:
 * its prototype's prototype is null) carries nothing JSON sends: a `Map`,
 * `Set`, `Headers` or `URLSearchParams` (their entries), an `Error` (its
 * message), a class whose fields are private or getters. The hook meant
 * what it holds; a plain `{}` is what it says.
 */
function refuseEmptyInstance(returned: object, json: string | undefined): void {
  if (json !== '{}') return;
  const prototype: unknown = Object.getPrototypeOf(returned);
  if (prototype === null || Object.getPrototypeOf(prototype) === null) return;
  const kind = Object.prototype.toString.call(returned).slice(8, -1);
  throw new TypeError(
    `an object JSON writes as {} (${kind}) is no 403 body: return a plain object`,
  );
}

/**
 * Calls an `onDeny` hook and answers the 403 body it chose: the object it
 * returned, or undefined for the default body. A promise is no body: an
 * async hook settles after the reply is decided. A throw, or a rejection,
 * goes to `onFailed` and the default body is used, so a failing hook can
 * neither become a 500 nor crash the process with an unhandled rejection.
 * So does a body JSON cannot write (a cycle, a BigInt, a throwing
 * `toJSON`): the adapters serialize it after this, where the error would be
 * a 500, or Fastify's error body with its message, instead of the 403. And
 * a stream, which JSON would write as its internals (`refuseStream`), or
 * bytes, a web `Response`, `Blob` or stream (`refuseNonJson`), or an object
 * that is not a plain one and JSON writes as `{}` (`refuseEmptyInstance`).
 * `response`, the adapter's reply object, is never a body when returned:
 * Fastify's reply is a thenable (awaiting it at each deny would pile
 * listeners on the response), Express's `res` a cycle JSON cannot write.
 */
export function hookBody(
  call: () => unknown,
  onFailed: (error: unknown) => void,
  response?: object,
): object | undefined {
  try {
    const returned = call();
    // A chained `reply.header(…)` / `res.set(…)` returns the response: no body.
    if (typeof returned !== 'object' || returned === null || returned === response)
      return undefined;
    const { then } = returned as { then?: unknown };
    if (typeof then !== 'function') {
      refuseStream(returned);
      refuseNonJson(returned);
      // Throws here, for onFailed, what the adapters' send would.
      refuseEmptyInstance(returned, JSON.stringify(returned));
      return returned;
    }
    // Both callbacks: Fastify's reply (`return reply.header(…)`) is a thenable
    // whose then() calls the first unchecked, a throw once the reply is sent.
    (then as PromiseLike<unknown>['then']).call(returned, ignore, onFailed);
  } catch (error) {
    onFailed(error);
  }
  return undefined;
}

/**
 * Runs `call` (an `onDeny` hook) with each method `names` names on
 * `response` wrapped to call `onCall` once the method returned, then puts
 * them back as they were. How an adapter learns that the hook began an
 * answer that has not left when it returns (Fastify's `send` held back by
 * an async `onSend` hook, Express's `render` or `sendFile`): the adapter
 * must then send none.
 */
export function callWatching<T>(
  response: object,
  names: readonly string[],
  onCall: () => void,
  call: () => T,
): T {
  const methods = response as Record<string, unknown>;
  const own = names.map((name) => Object.getOwnPropertyDescriptor(response, name));
  for (const name of names) {
    const method = methods[name];
    if (typeof method !== 'function') continue;
    methods[name] = function watched(this: unknown, ...args: unknown[]) {
      const result = method.apply(this, args);
      // Noted once it returned: a call that throws (a relative path to sendFile) began no answer.
      onCall();
      return result;
    };
  }
  try {
    return call();
  } finally {
    names.forEach((name, i) => {
      const descriptor = own[i];
      if (descriptor) Object.defineProperty(response, name, descriptor);
      else delete methods[name];
    });
  }
}
