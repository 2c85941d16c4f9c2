// The multipart bodies each parser is known to stall on, with neither an end
// nor an error (busboy-hangs.test.ts): for the tests of the parsers
// themselves and of the servers built on them.

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
 * A part without Content-Disposition, `size` bytes long, then the parts
 * `after`: @fastify/busboy 3.2.6 stalls skipping it when 16 KiB of it come
 * in one write.
 */
export const skippedPart = (boundary: string, size: number, after = '') =>
  Buffer.from(
    `--${boundary}\r\nX-Other: 1\r\n\r\n${'x'.repeat(size)}\r\n${after}--${boundary}--\r\n`,
  );
