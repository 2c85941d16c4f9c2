// What both example servers answer besides pathgate's own 403s: the same
// status and JSON body for the same failure, whichever framework raised it.
import { readFileSync } from 'node:fs';
import { type ServerResponse, STATUS_CODES } from 'node:http';
import { relative } from 'node:path';
import type { Duplex } from 'node:stream';
import { type Download, FileApiError } from './files.js';

export interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
}

function errorReply(statusCode: number, message: string): ErrorBody {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message };
}

/** Client errors the frameworks and the Express storage raise, by code: one answer for both apps. */
const KNOWN_CODES: Readonly<Record<string, readonly [number, string]>> = {
  FST_REQ_FILE_TOO_LARGE: [413, 'file too large'], // @fastify/multipart
  LIMIT_FILE_SIZE: [413, 'file too large'], // multer
  FST_FILES_LIMIT: [413, 'one file per upload'],
  LIMIT_FILE_COUNT: [413, 'one file per upload'],
  PATHGATE_EXISTS: [409, 'already exists'], // @pathgate/express's disk storage
  PATHGATE_NOT_A_DIRECTORY: [409, 'a parent is not a folder'],
  PATHGATE_NAME_TOO_LONG: [400, 'name too long'],
  PATHGATE_FILE_TOO_LARGE: [413, 'file too large'],
  PATHGATE_NO_SPACE: [507, 'insufficient storage'],
};

/**
 * The body for an error that is not a pathgate deny: a FileApiError as it
 * is, a known client error by its code, any other 4xx by its status alone
 * (framework messages can echo input), and everything else a bare 500.
 */
export function errorBody(error: unknown): ErrorBody {
  if (error instanceof FileApiError) return errorReply(error.statusCode, error.message);
  const { code, statusCode, status } = (error ?? {}) as Record<string, unknown>;
  const known = typeof code === 'string' && Object.hasOwn(KNOWN_CODES, code) && KNOWN_CODES[code];
  if (known) return errorReply(...known);
  const given = statusCode ?? status;
  if (typeof given === 'number' && Number.isInteger(given) && given >= 400 && given < 500) {
    return errorReply(given, (STATUS_CODES[given] ?? 'client error').toLowerCase());
  }
  return errorReply(500, 'internal error');
}

/** Node's parser errors with a status of their own; any other is a 400. */
const PARSER_STATUSES: Readonly<Record<string, number>> = {
  ERR_HTTP_REQUEST_TIMEOUT: 408,
  HPE_HEADER_OVERFLOW: 431,
};

/** Node's socket of a server: the response it is writing or awaits, if any (private). */
interface ServerSocket extends Duplex {
  _httpMessage?: ServerResponse | null;
}

/**
 * Whether a client error on `socket` is the answer to give: no response is
 * pending there (an answered keep-alive request is no reason for silence), or
 * the pending one, unstarted, is for the request whose bytes failed (its body,
 * or its time ran out). A request pipelined behind one still answered is not:
 * the error would be read as that one's answer.
 */
function answerable(socket: Duplex): boolean {
  const pending = (socket as ServerSocket)._httpMessage;
  return !pending || (!pending.headersSent && !pending.req.complete);
}

/**
 * Answers a request Node could not parse (the server's `clientError`) with
 * the JSON both examples send for a client error: Fastify's default body and
 * Node's empty one differ. The connection is closed after.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (socket.writable && answerable(socket)) {
    const statusCode = PARSER_STATUSES[error.code ?? ''] ?? 400;
    const body = JSON.stringify(errorBody({ statusCode }));
    socket.write(
      `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}\r\n` +
        'content-type: application/json; charset=utf-8\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** The 404 for a route neither app has. */
export const NOT_FOUND: ErrorBody = errorReply(404, 'no such route');

/** Headers for a download: a type that is never HTML, and no sniffing or scripts. */
export function downloadHeaders(download: Download): Record<string, string> {
  return {
    'content-type': download.type,
    'content-length': String(download.size),
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
  };
}

/** A canonical path as the client names it: relative to the sandbox root. */
export function shownPath(root: string, path: string): string {
  return relative(root, path);
}

/** The one page both examples serve at `/`, read once at start-up. */
export function indexPage(): string {
  return readFileSync(new URL('./index.html', import.meta.url), 'utf8');
}
