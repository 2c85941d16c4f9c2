import { finished, Writable } from 'node:stream';
import type { Request } from 'express';
import { uploadOf } from './upload.js';

/** The part of busboy's interface the watcher uses. */
interface PartStream {
  on(event: 'file', listener: (field: string, stream: unknown, info: PartInfo) => void): unknown;
  destroy(error?: Error): unknown;
}

interface PartInfo {
  filename?: string;
}

const watched = new WeakSet<object>();

const isPartStream = (value: unknown): value is PartStream =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as PartStream).on === 'function' &&
  typeof (value as PartStream).destroy === 'function';

/**
 * multer drops a file part whose filename is empty or missing without ever
 * calling `fileFilter` (busboy reports it as `undefined`). Watch busboy
 * itself, so such a part is denied like any other missing path. Being
 * called tells the upload that multer reads the body.
 */
export function watchParts(req: Request, parser: unknown): void {
  uploadOf(req)?.parsed();
  if (!isPartStream(parser) || watched.has(parser)) return;
  watched.add(parser);
  parser.on('file', (field, _stream, info) => {
    const upload = uploadOf(req);
    if (info.filename || !upload || upload.settled) return;
    const stop = upload.stopsWith(upload.decideFile(field, undefined));
    // multer aborts on busboy's error: it removes stored files, then calls back (swallowed).
    if (stop) parser.destroy(stop);
  });
  endIfClientLeaves(req, parser);
}

/**
 * Ends the parser if the connection closes (its client left) before the
 * parser is done: one that stalls (busboy 1.6, test/busboy-hangs.test.ts)
 * ends no part and calls back no more, and the storage would hold the file
 * it writes open for good. multer aborts on the error, as on a body cut
 * off, and removes what it stored; its status tells the app's error
 * handler the client is at fault. Not the request's 'close': it comes once
 * the body is read, while the parser may still be at work.
 */
function endIfClientLeaves(req: Request, parser: PartStream): void {
  const { socket } = req;
  if (!(parser instanceof Writable) || !socket) return;
  const left = () => {
    const error = new Error('pathgate: the client left before its body was parsed');
    parser.destroy(Object.assign(error, { statusCode: 400 }));
  };
  socket.once('close', left);
  finished(parser, () => socket.off('close', left));
}

type Pipe = Request['pipe'];

/**
 * multer feeds busboy with `req.pipe(busboy)`, synchronously inside its
 * middleware call, in every 2.x version. Catch that one call to watch the
 * parser; the returned function restores `req.pipe`.
 */
export function catchPipe(req: Request): () => void {
  const own = Object.getOwnPropertyDescriptor(req, 'pipe');
  const pipe = req.pipe;
  const caught = function pipeToParser(this: Request, ...args: Parameters<Pipe>) {
    watchParts(req, args[0]);
    return pipe.apply(this, args);
  };
  req.pipe = caught as Pipe;
  return () => {
    if (own) Object.defineProperty(req, 'pipe', own);
    else delete (req as { pipe?: Pipe }).pipe;
  };
}
