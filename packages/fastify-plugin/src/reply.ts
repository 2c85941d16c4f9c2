import { callWatching, denyBody, hookBody, type PathDenial, SAND_PERM_CODES } from '@pathgate/core';
import { bodyPending, closeWithAnswer, lingerClose } from '@pathgate/core/http';
import type { FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import { PathgateDeniedError } from './errors.js';
import { log, logDenial } from './log.js';
import type { PathgateSettings } from './options.js';
import { type RequestState, stateOf } from './request-state.js';
import { removeSpooled } from './spool.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** Node's state of a Readable: where it pipes to (an array since Node 14). */
interface Piping {
  _readableState?: { pipes?: unknown };
}

/**
 * The answer ends the upload where it is: multipart's parser is unpiped, or
 * one left waiting for a reader of its part (`file()` leaves the rest
 * unread) would pause the request again, and the rest would never be read
 * and dropped (HTTP/2's stream too). And it is ended, as if the body
 * stopped there: a part the handler still reads fails as a cut body does,
 * instead of waiting forever for bytes the drain drops (and leaving the
 * handler's half-written file). Parts that arrived whole stay readable.
 */
function endUpload(raw: FastifyRequest['raw']): void {
  const pipes = (raw as Piping)._readableState?.pipes;
  raw.unpipe();
  if (!Array.isArray(pipes)) return;
  for (const parser of pipes as { end?: () => unknown }[]) parser.end?.();
}

/**
 * Close the connection after the answer when the body is still arriving,
 * with a lingering close: a plain close resets the socket under a fast
 * client, which then sees EPIPE instead of the 403. The answer ends the
 * upload (`endUpload`). The header goes on the raw response, so that an
 * answer written there (a hijacked reply) carries it too: the lingering
 * close drops what comes next on the connection, which a keep-alive answer
 * would leave the client waiting on. Headers an earlier hook sent (an event
 * stream) said keep-alive: the connection closes once the response ends.
 */
export function closeIfBodyPending(
  request: FastifyRequest,
  reply: FastifyReply,
  settings: PathgateSettings,
): void {
  if (!bodyPending(request.raw)) return;
  endUpload(request.raw);
  const state = stateOf(request);
  if (state !== null) state.uploadEnded = true;
  if (lingerClose(request.raw, settings.linger)) closeWithAnswer(request.raw, reply.raw);
}

/** Replies an `onDeny` answered itself (`answered`). */
const answeredByHost = new WeakSet<FastifyReply>();

/**
 * The request was answered: sent, or by an `onDeny` whose answer an async
 * `onSend` hook still holds back (`reply.sent` is false until it leaves).
 */
export function answered(reply: FastifyReply): boolean {
  return reply.sent || answeredByHost.has(reply);
}

/**
 * The methods that begin an answer: `send`, which every answer goes through
 * (`redirect` too), and those that call it on a later turn, after `onDeny`
 * returned: Fastify's `callNotFound` (runs the not-found handler's hooks
 * first), @fastify/view's `view` (renders first), @fastify/static's
 * `sendFile` and `download` (stat the file first). One the app did not
 * decorate is skipped. `hijack()` needs none: it makes `reply.sent` true.
 */
const ANSWERS = ['send', 'callNotFound', 'view', 'sendFile', 'download'];

/** Calls `onDeny`, noting whether it began an answer (`ANSWERS`). */
function callOnDeny(
  request: FastifyRequest,
  reply: FastifyReply,
  denial: PathDenial,
  settings: PathgateSettings,
): unknown {
  const { onDeny } = settings;
  if (onDeny === undefined) return undefined;
  const sent = () => answeredByHost.add(reply);
  return callWatching(reply, ANSWERS, sent, () => onDeny(denial, request, reply));
}

/**
 * What every deny does before its 403: the host's `onDeny`, the log line and
 * the connection. Returns the body to send, or undefined in report-only
 * mode, where the request goes on.
 */
export function refuse(
  request: FastifyRequest,
  reply: FastifyReply,
  denial: PathDenial,
  settings: PathgateSettings,
): object | undefined {
  // Before onDeny, which may write the answer itself (`reply.hijack()`).
  if (!settings.reportOnly) closeIfBodyPending(request, reply, settings);
  const shaped = hookBody(
    () => callOnDeny(request, reply, denial, settings),
    (error) => log(request, 'error', { err: error }, 'pathgate: onDeny failed'),
    reply,
  );
  if (settings.reportOnly) {
    logDenial(request, 'warn', denial, 'pathgate: would deny (report-only)');
    return undefined;
  }
  logDenial(request, 'info', denial, 'pathgate: denied');
  return shaped ?? denyBody(denial);
}

/**
 * The answer to an enforced deny after an earlier hook sent the headers (an
 * event stream), which no 403 can follow: pathgate takes the response over
 * and cuts it, as Fastify cuts one whose error comes after its headers, but
 * without Fastify's "Reply was already sent" logs. The error marks the cut:
 * without one, HTTP/2 resets the stream with NO_ERROR, which a client reads
 * as the response's end. Unless `onDeny` ended the response itself.
 */
function cut(reply: FastifyReply, denial: PathDenial): void {
  if (reply.sent) return;
  reply.hijack();
  // Next tick: what the hook wrote (held in the socket until then) goes out first.
  process.nextTick(() => reply.raw.destroy(new PathgateDeniedError(denial)));
}

/**
 * A deny before the handler (in a hook, or in the guarded handler): the 403
 * (or the cut, after sent headers) goes out now, or once the files an
 * earlier hook had `saveRequestFiles()` spool are removed. False in
 * report-only mode (the request goes on) unless `onDeny` answered the
 * request itself.
 */
export function sendDenial(
  request: FastifyRequest,
  reply: FastifyReply,
  denial: PathDenial,
  settings: PathgateSettings,
): boolean {
  // Headers an earlier hook sent are no answer of onDeny's: only an end is.
  const sentBefore = reply.raw.headersSent;
  const body = refuse(request, reply, denial, settings);
  // Report-only: the request goes on, unless the app's onDeny answered it itself.
  if (body === undefined) return sentBefore ? reply.sent : answered(reply);
  const answer = () => {
    if (sentBefore) cut(reply, denial);
    // Serialized here: a route's response schema must not drop `reason`.
    else if (!answered(reply)) reply.code(403).type(JSON_TYPE).send(JSON.stringify(body));
  };
  const removal = removeSpooled(request);
  if (removal === undefined) answer();
  else void removal.then(answer, answer);
  return true;
}

const ANSWERED = Symbol('answered by onDeny');

/**
 * The headers that describe an answer's payload: its type, length and
 * encoding (an earlier onSend hook's, @fastify/compress), what a download
 * or a range set. None holds for an answer sent in its place.
 */
const PAYLOAD_HEADERS = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-location',
  'content-range',
  'content-disposition',
  'etag',
  'last-modified',
];

/** Removes the `PAYLOAD_HEADERS` the reply holds, and returns them. */
function takePayloadHeaders(reply: FastifyReply): Record<string, string | number | string[]> {
  const taken: Record<string, string | number | string[]> = {};
  for (const name of PAYLOAD_HEADERS) {
    const value = reply.getHeader(name);
    if (value === undefined) continue;
    taken[name] = value;
    reply.removeHeader(name);
  }
  return taken;
}

/**
 * In `onSend`: the deny of an iteration the handler dropped before a required
 * file (`PartChecks.dropped`) becomes the answer, the 403 body a full
 * iteration's deny gets (with the default error handler). Returns that body,
 * serialized; undefined in report-only mode (the answer goes out as it is);
 * `ANSWERED` when `onDeny` answered the request itself.
 */
function denyDropped(
  request: FastifyRequest,
  reply: FastifyReply,
  state: RequestState,
  denial: PathDenial,
  settings: PathgateSettings,
  payload: unknown,
): string | undefined | typeof ANSWERED {
  // Out of onDeny's sight: its answer, or the 403, is not the handler's.
  const described = takePayloadHeaders(reply);
  const body = refuse(request, reply, denial, settings);
  const byOnDeny = answered(reply);
  // Report-only goes on, unless onDeny answered: refused then, as if enforced.
  if (body === undefined && !byOnDeny) {
    reply.headers(described);
    return undefined;
  }
  state.refused = denial;
  // A stream the handler answered with is never read now, whoever answers
  // instead: let go of what it holds (a file, a descriptor per request).
  (payload as { destroy?: () => unknown } | null)?.destroy?.();
  if (byOnDeny) return ANSWERED;
  reply.code(403).type(JSON_TYPE);
  return JSON.stringify(body);
}

/** Fastify's own error body without a response schema: its four keys, no `reason`. */
function isPlainDenyPayload(payload: string, message: string): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return false;
  }
  if (typeof parsed !== 'object' || parsed === null || Object.keys(parsed).length !== 4) {
    return false;
  }
  const { statusCode, code, error } = parsed as Record<string, unknown>;
  return (
    statusCode === 403 &&
    code === SAND_PERM_CODES.DENIED &&
    error === 'Forbidden' &&
    (parsed as Record<string, unknown>).message === message
  );
}

type Serialize = (value: object) => string;

/** The reply's media type, `application/json` of `application/json; charset=utf-8`. */
function mediaType(reply: FastifyReply): string {
  const [type = ''] = String(reply.getHeader('content-type') ?? '').split(';');
  return type.trim().toLowerCase();
}

/** Where Fastify looks for the response schema of a thrown 403, in its order. */
const ERROR_SCHEMA_KEYS = ['403', '4xx', 'default'] as const;

/**
 * The route's response schema Fastify serializes a thrown 403 with, or
 * undefined when it uses its own error shape. A schema given per media type
 * is looked up by the reply's type, then the one for any type, as Fastify does.
 */
function errorSerializer(reply: FastifyReply): Serialize | undefined {
  for (const key of ERROR_SCHEMA_KEYS) {
    const found: unknown = reply.getSerializationFunction(key);
    if (found === undefined) continue;
    if (typeof found === 'function') return found as Serialize;
    const byType = found as Record<string, Serialize | undefined>;
    return byType[mediaType(reply)] ?? byType['*/*'];
  }
  return undefined;
}

/**
 * The body Fastify's error handling made of the thrown deny (its default
 * error handler, or a custom one that sends the error on): its own shape,
 * or what a response schema keeps of the error. Either way without `reason`.
 */
function isDefaultDenyPayload(reply: FastifyReply, payload: unknown, denial: PathDenial): boolean {
  if (typeof payload !== 'string') return false;
  const serialize = errorSerializer(reply);
  if (serialize === undefined) return isPlainDenyPayload(payload, denyBody(denial).message);
  const error = new PathgateDeniedError(denial);
  // What Fastify hands a response schema's serializer for an error.
  const shown = Object.create(error, {
    error: { value: 'Forbidden' },
    message: { value: error.message },
    statusCode: { value: 403 },
  });
  try {
    return payload === serialize(shown);
  } catch {
    return false; // a schema this error cannot fit: not a body Fastify made of it
  }
}

/**
 * On routes that declare files: an answer while the body is still arriving
 * closes the connection (a handler that caught a deny, a custom error
 * handler). And Fastify's error serialization drops unknown properties
 * (all but a response schema's), so a deny thrown out of a multipart
 * iteration would lose its `reason`: its 403 body is put back, only over
 * that exact default body (a custom error handler's own body is left
 * alone). Elsewhere a deny comes from a hook, which closes the connection
 * itself (`refuse`), and sends its body already serialized: nothing is thrown.
 * And an iteration the handler dropped is checked now (`denyDropped`).
 *
 * `appWide`: the hook of the app-wide hooks, or a route's own; each acts
 * only on the requests its side started.
 */
export function createOnSend(settings: PathgateSettings, appWide: boolean): onSendHookHandler {
  const finish: onSendHookHandler = (request, reply, payload, done) => {
    const state = stateOf(request);
    if (state === null || state.appWide !== appWide || !state.guard.expectsFiles) {
      return done(null, payload);
    }
    const dropped = state.droppedDenial?.();
    if (dropped !== undefined) {
      const answer = denyDropped(request, reply, state, dropped, settings, payload);
      // onDeny answered the request itself: that send, under way, replaces this
      // one, which stops here (`done` would write the response a second time).
      if (answer === ANSWERED) return;
      if (answer !== undefined) return done(null, answer);
    }
    closeIfBodyPending(request, reply, settings);
    const { refused, thrownBody } = state;
    if (refused === undefined || thrownBody === undefined || reply.statusCode !== 403) {
      return done(null, payload);
    }
    if (!isDefaultDenyPayload(reply, payload, refused)) return done(null, payload);
    done(null, JSON.stringify(thrownBody));
  };
  // Named for `printRoutes({ includeHooks: true })`.
  const name = appWide ? 'pathgateAppWideOnSend' : 'pathgateOnSend';
  return Object.defineProperty(finish, 'name', { value: name });
}
