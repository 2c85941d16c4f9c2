import { mkdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { denied, filesIn, postMultipart } from './helpers.js';
import { serveMultipart } from './multipart-server.js';

// Filenames as raw bytes: busboy decodes them once (RFC 5987 `filename*`
// included); pathgate checks exactly the `part.filename` the handler gets,
// never a second parse of Content-Disposition, and the handler writes to the
// canonical (NFC) path it was given.

/** The UTF-8 bytes of `text`, as the latin1 string the raw body builder writes. */
const utf8 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

/** Ends the part's Content-Disposition line and starts a second one, up to its filename's value. */
const SECOND = '\r\nContent-Disposition: form-data; name="upload"; filename=';

const part = (params: string) => ({
  disposition: `name="upload"; ${params}`,
  contentType: 'application/octet-stream',
  data: 'data',
});

describe('allowed names: stored at the canonical path of the name the handler saw', () => {
  const ROWS: readonly (readonly [string, string, string])[] = [
    ['NFD is stored as NFC', `filename="${utf8('cafe\u0301.png')}"`, 'café.png'],
    ['raw UTF-8', `filename="${utf8('résumé-日本.png')}"`, 'résumé-日本.png'],
    ['filename* in UTF-8', "filename*=UTF-8''r%C3%A9sum%C3%A9%20%E6%97%A5.png", 'résumé 日.png'],
    ['filename* in ISO-8859-1', "filename*=iso-8859-1''r%E9sum%E9.png", 'résumé.png'],
    ['percent signs are literal', 'filename="a%2Fb.png"', 'a%2Fb.png'],
    ['invalid UTF-8 becomes U+FFFD', 'filename="r\xe9sum\xe9.png"', 'r\uFFFDsum\uFFFD.png'],
    ['a path is cut to its basename', 'filename="../../etc/passwd.png"', 'passwd.png'],
    ['filename* with a path, cut too', "filename*=UTF-8''..%2F..%2Fetc%2Fx.png", 'x.png'],
    [
      'filename then filename*: the first',
      `filename="safe.png"; filename*=UTF-8''virus.exe`,
      'safe.png',
    ],
    [
      'filename* then filename: the last',
      `filename*=UTF-8''virus.exe; filename="safe.png"`,
      'safe.png',
    ],
    ['filename* in an unknown charset: read as latin1', "filename*=x-klingon''a%41.png", 'aA.png'],
    ['filename* with a bad escape: kept as sent', "filename*=UTF-8''a%ZZ.png", 'a%ZZ.png'],
    ['filename* with invalid UTF-8', "filename*=UTF-8''a%E9.png", 'a\uFFFD.png'],
    ['a leading space is kept', 'filename=" .png"', ' .png'],
    ['two Content-Disposition lines: the first', `filename="a.png"${SECOND}"b.exe"`, 'a.png'],
  ];

  it.each(ROWS)('%s', async (_name, params, stored) => {
    const s = await serveMultipart();
    const res = await postMultipart(s.port, '/file', [part(params)]);
    expect(res.status).toBe(200);
    const { filename } = res.json as { filename: string };
    expect(filename.normalize('NFC')).toBe(stored);
    expect(res.json).toMatchObject({ stored: [`${s.root}/uploads/${stored}`] });
    expect(filesIn(s.root)).toEqual([`uploads/${stored}`]);
  });
});

describe('denied names', () => {
  const OUT = 'path-not-in-allowlist';
  const ROWS: readonly (readonly [string, string, string])[] = [
    ['a NUL', 'filename="a\u0000b.png"', 'nul-byte'],
    ['a NUL in filename*', "filename*=UTF-8''a%00b.png", 'nul-byte'],
    ['an empty filename', 'filename=""', 'missing-path'],
    ['an empty filename*', "filename*=UTF-8''", 'missing-path'],
    ['".." becomes empty', 'filename=".."', 'missing-path'],
    ['filename* naming a denied type', "filename*=UTF-8''virus.exe", OUT],
    ['a right-to-left override', `filename="${utf8('\u202Egnp.exe')}"`, OUT],
    ['NFD of a denied name', `filename="${utf8('.e\u0301nv')}"`, OUT],
    ['whitespace only is a name, not missing', 'filename="   "', OUT],
    ['"." becomes empty', 'filename="."', 'missing-path'],
    ['two Content-Disposition lines: the first', `filename="b.exe"${SECOND}"a.png"`, OUT],
  ];

  it.each(ROWS)('%s → %s', async (_name, params, reason) => {
    const s = await serveMultipart();
    const res = await postMultipart(s.port, '/file', [part(params)]);
    expect(res.json).toEqual(denied('file *', reason));
    expect(filesIn(s.root)).toEqual([]);
  });
});

describe('preservePath: the name keeps its directories, joined under uploads', () => {
  it.each([
    ['../../etc/passwd.png', 'path-not-in-allowlist'],
    ['..%2F..%2Fx.png', 'path-not-in-allowlist'],
    ['..\\..\\win.png', 'path-not-in-allowlist'],
    ['sub/../../../x.png', 'path-not-in-allowlist'],
    ['sub/.. (the directory itself)', 'path-not-in-allowlist'],
    ['sub/', 'path-not-in-allowlist'],
  ])('%s → %s', async (name, reason) => {
    const s = await serveMultipart();
    const raw = name.split(' ')[0] as string;
    const params = raw.includes('%') ? `filename*=UTF-8''${raw}` : `filename="${raw}"`;
    const res = await postMultipart(s.port, '/preserve', [part(params)]);
    expect(res.json).toEqual(denied('file *', reason));
    expect(filesIn(s.root)).toEqual([]);
  });

  it('a sub-directory inside uploads is allowed', async () => {
    const s = await serveMultipart();
    mkdirSync(`${s.root}/uploads/sub`);
    const res = await postMultipart(s.port, '/preserve', [part('filename="sub/x.png"')]);
    expect(res.json).toEqual({ stored: [`${s.root}/uploads/sub/x.png`] });
  });
});
