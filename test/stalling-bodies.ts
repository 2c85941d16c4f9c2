// The multipart bodies each parser is known to stall on, with neither an end
// nor an error (busboy-hangs.test.ts): for the tests of the parsers
// themselves and of the servers built on them.
import { getDefaultHighWaterMark } from 'node:stream';

/** A file part of `size` bytes named `name` in `field`. */
export const filePartOf = (boundary: string, field: string, name: string, size: number) =>
  `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${name}"\r\n\r\n${'x'.repeat(size)}\r\n`;

/**
 * A body that opens with a closing delimiter, then two files in `field`,
 * the second `size` bytes long, then (if `ended`) a closing delimiter:
 * busboy 1.6 (multer) stalls on the second once its content spans two
 * writes, or at once when the body does not end with a closing delimiter.
 */
export const closedFirst = (boundary: string, field: string, size: number, ended = true) =>
  Buffer.from(
    `\r\n--${boundary}--\r\n${filePartOf(boundary, field, 'a.txt', 10)}${filePartOf(boundary, field, 'b.txt', size)}${ended ? `--${boundary}--\r\n` : ''}`,
  );

/**
 * @fastify/busboy 3.2.6's part streams' highWaterMark: it sets none, so they
 * take Node's default, 16 KiB on Node 20 and 64 KiB from Node 22 on. It stalls
 * skipping a part when one write brings this much of the part's content and
 * the delimiter that ends it (busboy-hangs.test.ts).
 */
export const PART_HWM = getDefaultHighWaterMark(false);

/**
 * The most one socket read hands a node:http server, so one write to the
 * parser a request is piped into: libuv reads 64 KiB at a time. From Node 22
 * on, `PART_HWM` bytes and a delimiter do not fit in it.
 */
export const SOCKET_READ_MAX = 64 * 1024;

/**
 * A part without Content-Disposition, `size` bytes long, then the parts
 * `after`: @fastify/busboy 3.2.6 stalls skipping it when `PART_HWM` bytes of
 * it come in one write with the delimiter that ends it.
 */
export const skippedPart = (boundary: string, size: number, after = '') =>
  Buffer.from(
    `--${boundary}\r\nX-Other: 1\r\n\r\n${'x'.repeat(size)}\r\n${after}--${boundary}--\r\n`,
  );
