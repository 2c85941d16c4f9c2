import fc from 'fast-check';

// Shared by the HTTP fuzzing tests (fuzz-http, parity-fuzz): path text from
// traversal pieces (dots, slashes, backslashes, percent text, NUL, look-alike
// dots and slashes, combining marks, astral characters, `~`), its encoding
// for a request target, and JSON values written as text.

export const PIECES = [
  '.',
  '..',
  '/',
  '\\',
  '%2e',
  '%2f',
  '%2E%2E',
  '%252e',
  '%00',
  '\0',
  '\uFF0E', // fullwidth full stop
  '\u2024', // one dot leader
  '\uFE52', // small full stop
  '\uFF0F', // fullwidth solidus
  '\u2215', // division slash
  '\u0301', // combining acute
  '\u0338', // combining long solidus overlay
  'e\u0301',
  '\u00e9',
  '\u212B', // angstrom sign (NFC: Å)
  '\u{1F600}',
  '\u{10FFFD}',
  '~',
  ' ',
  '%',
  '+',
  ';',
  ':',
  '?',
  '#',
  '&',
  '=',
  'a',
  'b.png',
  'public',
  'uploads',
  '.env',
  'etc',
  'passwd',
  'C:',
] as const;

export const piece = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...PIECES) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 2 }) },
);

/** A path from traversal pieces after one of `starts` (often an allowed folder). */
export const pathFrom = (starts: readonly string[], extra: fc.Arbitrary<string> = piece) =>
  fc
    .tuple(fc.constantFrom(...starts), fc.array(extra, { maxLength: 12 }))
    .map(([start, rest]) => start + rest.join(''));

/** Per-character choices: encode a character that could go literally. */
export const flags = fc.array(fc.boolean(), { minLength: 1, maxLength: 16 });

export const pctBytes = (ch: string) =>
  Array.from(
    Buffer.from(ch, 'utf8'),
    (b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
  ).join('');

/** Encodes for a request target: characters in `safe` go literally unless their flag says otherwise. */
export function encode(
  value: string,
  safe: RegExp,
  choices: readonly boolean[],
  space = pctBytes(' '),
) {
  let out = '';
  let i = 0;
  for (const ch of value) {
    const encoded = choices[i++ % choices.length];
    if (ch === ' ') out += encoded ? '%20' : space;
    else out += safe.test(ch) && !encoded ? ch : pctBytes(ch);
  }
  return out;
}

export const PATH_SAFE = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/\\]$/;
export const QUERY_SAFE = /^[A-Za-z0-9\-._~!$'()*,;:@/\\?]$/;

/** A JSON value as written: objects keep their entries in order, duplicates and `__proto__` included. */
export type Json =
  | string
  | number
  | boolean
  | null
  | readonly Json[]
  | { readonly entries: readonly (readonly [string, Json])[] };

/** Pieces for JSON strings, which can also hold lone surrogates. */
export const JSON_PIECES = fc.oneof(
  { weight: 8, arbitrary: piece },
  { weight: 1, arbitrary: fc.constantFrom('\uD800', '\uDC00', '\uDBFF\uDFFF') },
);

/** JSON values of any shape: `text` for strings, objects keyed from `keys`. */
export function jsonOf(text: fc.Arbitrary<string>, keys: fc.Arbitrary<string>): fc.Arbitrary<Json> {
  return fc.letrec<{ json: Json; object: Json }>((tie) => ({
    json: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { weight: 4, arbitrary: text },
      { weight: 1, arbitrary: fc.constantFrom<Json>(null, true, false, 0, 42, -1.5, 1e308) },
      { weight: 2, arbitrary: fc.array(tie('json'), { maxLength: 3 }) },
      { weight: 2, arbitrary: tie('object') },
    ),
    object: fc
      .array(fc.tuple(keys, tie('json')), { maxLength: 4 })
      .map((entries) => ({ entries }) as Json),
  })).json;
}

export function toJson(value: Json): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  const { entries } = value as { entries: readonly (readonly [string, Json])[] };
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`).join(',')}}`;
}
