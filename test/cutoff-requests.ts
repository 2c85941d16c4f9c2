// The requests of the cut-off property test (examples-cutoff.test.ts):
// uploads that may be cut off part-way, carry a second file or too many
// bytes, on a few names that share new folders; and moves and deletes of
// those names. Each is sent held or not, its body in pieces, as the
// concurrent test sends its own (examples-concurrent.test.ts).
import fc from 'fast-check';
import { postFiles, postJson, type Sent, sendCut, sendHeld } from './examples.js';

/** Upload names below uploads/: two new folders sharing one, a file named as a folder, the seeded file. */
const NAMES = ['a/b/x.txt', 'a/c/y.txt', 'a/b/y.txt', 'a/b', 'n.txt', 'hello.txt'];

/** Second files the examples' `files: 1` refuses: allowed, denied, or over the size limit. */
type Second = 'allowed' | 'denied' | 'large';

/** One byte over both examples' `fileSize` (10 MiB). */
const OVER_LIMIT = 10 * 1024 * 1024 + 1;

export interface Upload {
  operation: 'upload';
  target: string;
  size: number;
  second: Second | undefined;
  /** Where in the body it is cut off, in thousandths of the bytes before its last file's end. */
  cut: number | undefined;
}

export type Request =
  | Upload
  | { operation: 'move'; from: string; to: string }
  | { operation: 'delete'; path: string };

/** A request and how it is sent: `held` ones send their last byte (or hang up) in one tick. */
export interface Timed {
  request: Request;
  held: boolean;
  chunks: number;
  pause: number;
}

const name = fc.constantFrom(...NAMES);

/** `arbitrary`'s values `weight` times in `weight + 2`, else none. */
const sometimes = <T>(arbitrary: fc.Arbitrary<T>, weight: number) =>
  fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight, arbitrary });

const upload: fc.Arbitrary<Upload> = fc.record({
  operation: fc.constant('upload' as const),
  target: name,
  size: fc.oneof(
    { weight: 24, arbitrary: fc.constantFrom(1, 3000, 100_000) },
    { weight: 1, arbitrary: fc.constant(OVER_LIMIT) },
  ),
  second: sometimes(
    fc.oneof(
      { weight: 10, arbitrary: fc.constantFrom<Second>('allowed', 'denied') },
      { weight: 1, arbitrary: fc.constant<Second>('large') },
    ),
    1,
  ),
  cut: sometimes(fc.nat(1000), 1),
});

const request: fc.Arbitrary<Request> = fc.oneof(
  { weight: 4, arbitrary: upload },
  {
    weight: 2,
    arbitrary: fc.record({ operation: fc.constant('move' as const), from: name, to: name }),
  },
  { weight: 1, arbitrary: fc.record({ operation: fc.constant('delete' as const), path: name }) },
);

/** How a failure shows a request. */
export function label(request: Request): string {
  if (request.operation === 'move') return `move ${request.from} to ${request.to}`;
  if (request.operation === 'delete') return `delete ${request.path}`;
  const { target, size, second, cut } = request;
  const more = `${second ? `, a second file ${second}` : ''}${cut === undefined ? '' : `, cut at ${cut}‰`}`;
  return `upload ${target} (${size} bytes${more})`;
}

const timed: fc.Arbitrary<Timed> = fc
  .record({
    request,
    held: fc.boolean(),
    chunks: fc.integer({ min: 1, max: 4 }),
    pause: fc.integer({ min: 0, max: 4 }),
  })
  .map((sent) => ({ ...sent, [fc.toStringMethod]: () => label(sent.request) }));

export const batches = fc.array(fc.array(timed, { minLength: 2, maxLength: 5 }), {
  minLength: 1,
  maxLength: 3,
});

/** Each upload's content, told apart by its serial number: a prefix of one is no other's. */
export const contentOf = (serial: number, size: number) =>
  `#${serial}#`.padEnd(Math.max(size, 8), String.fromCharCode(97 + (serial % 26)));

/** The second file of an upload, in the sandbox's terms. */
function secondFile(second: Second): [string, string, string] {
  if (second === 'denied') return ['file', '../secret.txt', 'not stored'];
  if (second === 'large') return ['file', 'n.txt', 'z'.repeat(OVER_LIMIT)];
  return ['file', 'n.txt', 'second'];
}

/** What is sent for `request`; an upload's file holds `content`. */
export function sentFor(request: Request, content: string): Sent {
  if (request.operation === 'move') {
    const { from, to } = request;
    return postJson('/api/move', JSON.stringify({ from: `uploads/${from}`, to: `uploads/${to}` }));
  }
  if (request.operation === 'delete')
    return { method: 'DELETE', path: `/files/uploads/${request.path}` };
  const first: [string, string, string] = ['file', request.target, content];
  const files = request.second ? [first, secondFile(request.second)] : [first];
  return postFiles('/api/upload', ...files);
}

/**
 * Where `sent`, an upload cut at `cut` thousandths, hangs up: before the
 * line break that ends its last file, so no server ever reads it whole.
 */
function cutAt(sent: Sent, cut: number): number {
  const body = Buffer.from(sent.body ?? '');
  const end = body.lastIndexOf('\r\n--');
  return Math.floor((end * cut) / 1000);
}

/** Sends `timed` once `release` settles (held) or at once; its status, `undefined` if it hung up or was closed. */
export function send(
  port: number,
  { request, held, chunks, pause }: Timed,
  content: string,
  release: Promise<unknown>,
): { ready: Promise<void>; status: Promise<number | undefined> } {
  const sent = sentFor(request, content);
  const options = { chunks, pause, release: held ? release : Promise.resolve() };
  if (request.operation === 'upload' && request.cut !== undefined) {
    const { ready, got } = sendCut(port, sent, { ...options, cut: cutAt(sent, request.cut) });
    return { ready, status: got.then((answer) => answer?.status) };
  }
  const { ready, got } = sendHeld(port, sent, options);
  return {
    ready,
    status: got.then(
      ({ status }) => status,
      () => undefined,
    ),
  };
}
