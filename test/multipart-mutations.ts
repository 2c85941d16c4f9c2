// The bodies of the multipart mutation test (multipart-mutations.test.ts):
// a valid upload (files with allowed and denied names, a field), then 1 to 5
// mutations of a small grammar: part headers rewritten (odd quoting,
// duplicated params, `filename*=` badly encoded, a long line, no colon),
// tiny fields by the hundred, a part repeated, a Content-Type that declares
// the boundary otherwise; and bytes flipped, inserted, deleted, repeated or
// the body cut, at random or at a landmark (a boundary, a CRLF, a quote).
import fc from 'fast-check';

export const BOUNDARY = '----mfuzz-Q7vX2';

/** Upload names below the route's folder: fresh ones (`#`: the body's serial), one there already, one below a file. */
const ALLOWED = ['m#.txt', 'd#/e/f.txt', 'hello.txt', 'ü#.txt', 'hello.txt/x#.txt'];
/** Names the policy denies: out of the folder, a dot file, a NUL, absolute. */
const DENIED = [
  '../secret.txt',
  '../../../up#.txt',
  '.env#',
  'a\0#.txt',
  '/etc/m#.txt',
  'x/../../y#',
];

/** How a part's Content-Disposition line is written; `<N>` stands for the filename, `<F>` for the field, `#` for the serial. */
const DISPOSITIONS = [
  'Content-Disposition: form-data; name=<F>; filename=<N>',
  "Content-Disposition: form-data; name='<F>'; filename='<N>'",
  'Content-Disposition: form-data; name="<F>"; filename="a\\"<N>"',
  'Content-Disposition: form-data; name="<F>"; filename="<N>',
  'Content-Disposition: form-data; name="<F>"; filename="<N>"; filename="other#.txt"',
  'Content-Disposition: form-data; name="other"; name="<F>"; filename="<N>"',
  'Content-Disposition: form-data; name="<F>"; filename="<N>"; filename*=UTF-8\'\'%ZZbad#.txt',
  'Content-Disposition: form-data; name="<F>"; filename*=UTF-8\'\'..%2F..%2Fsecret.txt',
  'Content-Disposition: form-data; name="<F>"; filename*=x-bogus\'\'m%E2%82#.txt',
  'Content-Disposition: form-data; name="<F>"; filename*=UTF-8\'en\'%C3%28#.txt',
  'Content-Disposition form-data; name="<F>"; filename="<N>"',
  'content-disposition: FORM-DATA; NAME="<F>"; FILENAME="<N>"',
  'Content-Disposition: form-data ; name = "<F>" ; filename = "<N>"',
  'Content-Disposition: form-data; name="<F>"; filename=""',
  'Content-Disposition: form-data; name="<F>"',
];

/** A Content-Type header for the body; `<B>` stands for its boundary. */
export const CONTENT_TYPES = [
  'multipart/form-data; boundary=<B>',
  'multipart/form-data; boundary="<B>"',
  'multipart/form-data; charset=utf-8; boundary=<B>; foo=bar',
  'multipart/form-data',
  'multipart/form-data; boundary=<B>-other',
  'multipart/form-data; boundary=----mfuzz',
  'Multipart/Form-Data; BOUNDARY=<B>',
  'multipart/form-data; boundary=x; boundary=<B>',
  'multipart/form-data; boundary=<B>;',
  'multipart/form-data; boundary=',
  'multipart/mixed; boundary=<B>',
];

/** What byte mutations insert: framing pieces, quotes, odd bytes. */
const PIECES = [
  '\r',
  '\n',
  '\r\n',
  '\r\n\r\n',
  '-',
  '--',
  '"',
  ';',
  '=',
  ':',
  '%',
  '\\',
  '\0',
  '\xff',
  '/',
  '..',
  `--${BOUNDARY}`,
  `\r\n--${BOUNDARY}\r\n`,
  `\r\n--${BOUNDARY}--\r\n`,
  'filename="z#.txt"',
  'Content-Disposition: form-data; name="<F>"; filename="w#.txt"\r\n',
];

/** Where byte mutations land: the nth occurrence of one of these (plus a shift), or anywhere. */
const LANDMARKS = [`--${BOUNDARY}`, '\r\n', '\r\n\r\n', '"', ';', '=', 'filename', 'name='];

export interface Part {
  /** A file's name template, or `undefined` for a plain field. */
  name: string | undefined;
  size: number;
}

/** A part as its mutations shape its head. */
interface Shaped extends Part {
  /** Index into DISPOSITIONS, else the plain `name="<F>"; filename="<N>"`. */
  disposition?: number;
  /** A header line of this many bytes before the Content-Type. */
  longLine?: number;
}

type Where = { landmark: number; nth: number; shift: number } | { fraction: number };

export type Mutation =
  | { kind: 'disposition'; part: number; variant: number }
  | { kind: 'long-line'; part: number; length: number }
  | { kind: 'tiny-parts'; count: number; at: number }
  | { kind: 'repeat-part'; part: number }
  | { kind: 'content-type'; variant: number }
  | { kind: 'flip'; where: Where; xor: number }
  | { kind: 'insert'; where: Where; piece: number }
  | { kind: 'delete'; where: Where; length: number }
  | { kind: 'repeat'; where: Where; length: number }
  | { kind: 'cut'; fraction: number };

export interface Plan {
  parts: Part[];
  mutations: Mutation[];
}

const name = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...ALLOWED) },
  { weight: 1, arbitrary: fc.constantFrom(...DENIED) },
);

const part: fc.Arbitrary<Part> = fc.record({
  name: fc.oneof({ weight: 4, arbitrary: name }, { weight: 1, arbitrary: fc.constant(undefined) }),
  size: fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 0, max: 200 }) },
    { weight: 1, arbitrary: fc.constantFrom(3000, 70_000) },
  ),
});

const where: fc.Arbitrary<Where> = fc.oneof(
  fc.record({
    landmark: fc.nat(LANDMARKS.length - 1),
    nth: fc.nat(20),
    shift: fc.integer({ min: -3, max: 3 }),
  }),
  fc.record({ fraction: fc.double({ min: 0, max: 1, noNaN: true }) }),
);

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({
    kind: fc.constant('disposition' as const),
    part: fc.nat(3),
    variant: fc.nat(DISPOSITIONS.length - 1),
  }),
  fc.record({
    kind: fc.constant('long-line' as const),
    part: fc.nat(3),
    length: fc.constantFrom(1000, 17_000, 100_000),
  }),
  fc.record({
    kind: fc.constant('tiny-parts' as const),
    count: fc.constantFrom(20, 999, 1500),
    at: fc.nat(3),
  }),
  fc.record({ kind: fc.constant('repeat-part' as const), part: fc.nat(3) }),
  fc.record({
    kind: fc.constant('content-type' as const),
    variant: fc.nat(CONTENT_TYPES.length - 1),
  }),
  fc.record({ kind: fc.constant('flip' as const), where, xor: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('insert' as const), where, piece: fc.nat(PIECES.length - 1) }),
  fc.record({
    kind: fc.constant('delete' as const),
    where,
    length: fc.integer({ min: 1, max: 16 }),
  }),
  fc.record({
    kind: fc.constant('repeat' as const),
    where,
    length: fc.integer({ min: 1, max: 300 }),
  }),
  fc.record({
    kind: fc.constant('cut' as const),
    fraction: fc.double({ min: 0, max: 1, noNaN: true }),
  }),
);

export const plans: fc.Arbitrary<Plan> = fc.record({
  parts: fc.array(part, { minLength: 1, maxLength: 3 }),
  mutations: fc.array(mutation, { minLength: 1, maxLength: 5 }),
});

/** Where the request goes, and the field its files are sent in. */
export interface Target {
  path: string;
  field: string;
}

/** A request's bytes: its Content-Type and body. */
export interface Rendered {
  type: string;
  body: Buffer;
}

/** Each part's content, told apart by the body's serial and the part's index: `#7.1#aaa…`. */
const contentOf = (serial: number, index: number, size: number) =>
  `#${serial}.${index}#`
    .padEnd(size, String.fromCharCode(97 + ((serial + index) % 26)))
    .slice(0, size);

const fill = (text: string, serial: number, target: Target) =>
  text.replaceAll('#', String(serial)).replaceAll('<F>', target.field);

/** A part's bytes (latin1 text, names as UTF-8), before the byte mutations. */
function partText(p: Shaped, index: number, serial: number, target: Target): string {
  const filename = fill(p.name ?? '', serial, target);
  const template =
    p.disposition === undefined
      ? `Content-Disposition: form-data; ${p.name === undefined ? 'name="note"' : 'name="<F>"; filename="<N>"'}`
      : (DISPOSITIONS[p.disposition] as string);
  const disposition = fill(template, serial, target).replaceAll('<N>', filename);
  const long = p.longLine === undefined ? '' : `X-Long: ${'h'.repeat(p.longLine)}\r\n`;
  const head = `${disposition}\r\n${long}Content-Type: application/octet-stream`;
  const utf8 = Buffer.from(head, 'utf8').toString('latin1');
  return `--${BOUNDARY}\r\n${utf8}\r\n\r\n${contentOf(serial, index, p.size)}\r\n`;
}

const tinyParts = (count: number) =>
  Array.from(
    { length: count },
    (_, i) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="t${i}"\r\n\r\nv\r\n`,
  ).join('');

/** Applies the part-level mutations to a copy of `parts`; the texts of the parts in order. */
function partTexts(plan: Plan, serial: number, target: Target): string[] {
  const parts: Shaped[] = plan.parts.map((p) => ({ ...p }));
  for (const m of plan.mutations) {
    const p = 'part' in m ? parts[m.part % parts.length] : undefined;
    if (m.kind === 'disposition' && p) p.disposition = m.variant;
    if (m.kind === 'long-line' && p) p.longLine = m.length;
  }
  const texts = parts.map((p, i) => partText(p, i, serial, target));
  for (const m of plan.mutations) {
    if (m.kind === 'repeat-part') texts.push(texts[m.part % texts.length] as string);
    if (m.kind === 'tiny-parts') texts.splice(m.at % (texts.length + 1), 0, tinyParts(m.count));
  }
  return texts;
}

/** The byte offset `where` names in `body`. */
function offset(body: Buffer, spot: Where): number {
  if ('fraction' in spot) return Math.floor(spot.fraction * body.length);
  const mark = Buffer.from(LANDMARKS[spot.landmark] as string, 'latin1');
  const found: number[] = [];
  for (let at = body.indexOf(mark); at !== -1; at = body.indexOf(mark, at + 1)) found.push(at);
  const at = found.length === 0 ? 0 : (found[spot.nth % found.length] as number);
  return Math.min(Math.max(at + spot.shift, 0), body.length);
}

/** `body` with one byte-level mutation applied (others leave it as it is). */
function mutate(body: Buffer, m: Mutation, serial: number, target: Target): Buffer {
  if (m.kind === 'cut') return body.subarray(0, Math.floor(m.fraction * body.length));
  if (!('where' in m)) return body;
  const at = offset(body, m.where);
  const [before, after] = [body.subarray(0, at), body.subarray(at)];
  if (m.kind === 'flip') {
    const flipped = Buffer.from(body);
    if (at < body.length) flipped[at] = (flipped[at] as number) ^ m.xor;
    return flipped;
  }
  if (m.kind === 'insert') {
    const piece = fill(PIECES[m.piece] as string, serial, target);
    return Buffer.concat([before, Buffer.from(piece, 'latin1'), after]);
  }
  if (m.kind === 'delete') return Buffer.concat([before, after.subarray(m.length)]);
  return Buffer.concat([before, after.subarray(0, m.length), after]);
}

/** The request `plan` makes for `target`: its serial tells its files apart from other bodies'. */
export function render(plan: Plan, serial: number, target: Target): Rendered {
  const text = `${partTexts(plan, serial, target).join('')}--${BOUNDARY}--\r\n`;
  let body: Buffer = Buffer.from(text, 'latin1');
  for (const m of plan.mutations) body = mutate(body, m, serial, target);
  const variant = plan.mutations.findLast((m) => m.kind === 'content-type');
  const type = CONTENT_TYPES[variant?.kind === 'content-type' ? variant.variant : 0] as string;
  return { type: type.replaceAll('<B>', BOUNDARY), body };
}
