import {
  compileRouteGuard,
  type GuardDenyReason,
  type PathDenial,
  type PathgateInfo,
  PermissionPolicy,
} from '@pathgate/core';
import { MULTIPART_TYPE, multipartBody, type Route, type Sent } from './apps.js';

// The shared attack corpus: requests carrying path payloads (after
// PayloadsAllTheThings "Directory Traversal" and dotdotpwn, and every bypass
// class the README's threat model names), each placed where a request
// carries paths, with the answer the contract gives. Every expected answer
// and canonical path is written by hand from DESIGN.md and the READMEs,
// never computed by the code under test. A row that Fastify and Express
// answer differently *before pathgate runs* (their routers and parsers
// differ) gives each framework's answer and says why.

export const ROOT = '/srv/root';
export const RULES = ['public/**', 'rw:uploads/**'];
export const policy = new PermissionPolicy({ root: ROOT, permissions: { fs: RULES } });

/** Where a payload goes: the route that reads it, and how pathgate labels it. */
export interface Location {
  readonly route: Route;
  readonly source: 'params' | 'query' | 'headers' | 'body' | 'files';
  /** The key of the value in `request.pathgate[source]` (none for files). */
  readonly key: string;
  /** The label in the 403 message. */
  readonly label: string;
}

const UPLOAD_ROUTE: Route = {
  method: 'POST',
  url: '/upload',
  mode: 'write',
  paths: [{ file: 'upload', under: 'uploads' }],
};

export const LOCATIONS = {
  /** `GET /files/<raw>`: the wildcard, read. */
  param: {
    route: { method: 'GET', url: '/files/*', mode: 'read', paths: [{ params: '*' }] },
    source: 'params',
    key: '*',
    label: 'params.*',
  },
  /** `GET /doc/<raw>`: one segment, joined under `public`, read. */
  'param-under': {
    route: {
      method: 'GET',
      url: '/doc/:name',
      mode: 'read',
      paths: [{ params: 'name', under: 'public' }],
    },
    source: 'params',
    key: 'name',
    label: 'params.name',
  },
  /** `GET /q?<raw>`: the `path` key, read. */
  query: {
    route: { method: 'GET', url: '/q', mode: 'read', paths: [{ query: 'path' }] },
    source: 'query',
    key: 'path',
    label: 'query.path',
  },
  /** `GET /h` with `x-file: <raw>` (one header line per element of an array), read. */
  header: {
    route: { method: 'GET', url: '/h', mode: 'read', paths: [{ headers: 'x-file' }] },
    source: 'headers',
    key: 'x-file',
    label: 'headers.x-file',
  },
  /** `POST /json` with the JSON text `<raw>`: the `path` key, write. */
  json: {
    route: { method: 'POST', url: '/json', mode: 'write', paths: [{ body: 'path' }] },
    source: 'body',
    key: 'path',
    label: 'body.path',
  },
  /** `POST /deep` with the JSON text `<raw>`: `files[0].path`, write. */
  'json-deep': {
    route: { method: 'POST', url: '/deep', mode: 'write', paths: [{ body: ['files', 0, 'path'] }] },
    source: 'body',
    key: 'files.0.path',
    label: 'body.files.0.path',
  },
  /**
   * `POST /upload`, multipart, one file part per `<raw>` Content-Disposition:
   * the filenames of field `upload`, joined under `uploads`, write.
   */
  multipart: { route: UPLOAD_ROUTE, source: 'files', key: '', label: 'file upload' },
  /** `POST /upload` with the JSON text `<raw>`: a body posing as file parts. It carries no file. */
  'upload-json': { route: UPLOAD_ROUTE, source: 'files', key: '', label: 'file upload' },
} as const satisfies Record<string, Location>;

export type LocationName = keyof typeof LOCATIONS;
export const ROUTES: readonly Route[] = [...new Set(Object.values(LOCATIONS).map((l) => l.route))];

export type Expected =
  /** Allowed: the canonical path(s) `request.pathgate` holds (an array for an array value or several files). */
  | { readonly status: 200; readonly path: string | readonly string[] }
  /** Denied by pathgate. `label` only when it is not the location's. */
  | { readonly status: 403; readonly reason: GuardDenyReason; readonly label?: string }
  /** Refused by the framework or node's HTTP parser before pathgate runs. */
  | { readonly status: 400 | 404 | 414 | 415 | 431; readonly by: string };

/** A multipart file part as the framework hands it over: a filename in `upload`, or [field, filename]. */
export type FilePart = string | readonly [field: string | undefined, filename: string | undefined];

export interface Side {
  /**
   * What the framework hands pathgate: the decoded param, the query value
   * (an array for a repeated key), the header, the parsed JSON body, or the
   * multipart file parts (`FilePart[]`); `undefined` when there is none.
   * When left out: `decodeURIComponent(raw)` for params, the `path` values
   * of `URLSearchParams(raw)` for the query, `raw` for a header,
   * `JSON.parse(raw)` for JSON.
   */
  readonly value?: unknown;
  readonly expect: Expected;
}

export type Origin = 'PayloadsAllTheThings' | 'dotdotpwn' | 'threat model' | 'contract';

interface RowBase {
  readonly at: LocationName;
  readonly from: Origin;
  readonly name: string;
  /**
   * The raw request piece: the target after `/files/` or `/doc/`, the query
   * after `?`, the header value (an array: one line each), the multipart
   * Content-Disposition(s) after `form-data; ` (all sent as latin1 text, so
   * each character is one byte on the wire), or the JSON text (sent as UTF-8).
   */
  readonly raw: string | readonly string[];
  /** JSON and multipart rows: the content-type sent; `null` sends none. Default: the usual one. */
  readonly contentType?: string | null;
  /** Written on a plain socket: bytes node:http refuses to send (a NUL in a header). */
  readonly socket?: boolean;
}

/** Both frameworks hand over the same value and get the same answer, or each its own, with why. */
export type CorpusRow = RowBase &
  (Side | { readonly fastify: Side; readonly express: Side; readonly why: string });

// ---- builders -------------------------------------------------------------

const S = ROOT;
const ok = (path: string | readonly string[]): Expected => ({ status: 200, path });
const deny = (reason: GuardDenyReason, label?: string): Expected =>
  label === undefined ? { status: 403, reason } : { status: 403, reason, label };
const refused = (status: 400 | 404 | 414 | 415 | 431, by: string): Expected => ({ status, by });

const N = deny('path-not-in-allowlist');
const M = deny('mode-not-permitted');
const MISSING = deny('missing-path');
const NUL = deny('nul-byte');
const NOT_STRING = deny('not-a-string');
const BAD_UNICODE = deny('invalid-unicode');
const TOO_LONG = deny('path-too-long');

const BAD_ESCAPE = refused(
  400,
  'both routers refuse a param that does not decode (find-my-way FST_ERR_BAD_URL; Express decodeURIComponent → 400)',
);
const FASTIFY_PROTO = refused(
  400,
  "Fastify's JSON parser (secure-json-parse) refuses __proto__ and constructor.prototype keys",
);

/** The UTF-8 bytes of `text`, as the latin1 text the clients write byte for byte. */
const bytes = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
/** Percent-encodes the UTF-8 bytes of every non-ASCII character; ASCII stays as written. */
const pct = (text: string) =>
  Array.from(text, (c) => (c.charCodeAt(0) < 0x80 ? c : encodeURIComponent(c))).join('');

type Split = { fastify: Side; express: Side; why: string };
type Extra = Partial<Pick<RowBase, 'contentType' | 'socket'>> & { value?: unknown };

function rows(at: LocationName) {
  return (
    from: Origin,
    name: string,
    raw: string | readonly string[],
    answer: Expected | Split,
    extra: Extra = {},
  ): CorpusRow => {
    const base = { at, from, name, raw, ...extra };
    return 'why' in answer ? { ...base, ...answer } : { ...base, expect: answer };
  };
}

const param = rows('param');
const under = rows('param-under');
const query = rows('query');
const header = rows('header');
const json = rows('json');
const deep = rows('json-deep');
const upload = rows('multipart');
const uploadJson = rows('upload-json');
const file = (filename: string) => `name="upload"; filename="${filename}"`;
const file5987 = (encoded: string) => `name="upload"; filename*=UTF-8''${encoded}`;

// ---- the corpus -------------------------------------------------------------

const PARAMS: readonly CorpusRow[] = [
  param('PayloadsAllTheThings', '../ to /etc/passwd', '../../../etc/passwd', N),
  param('dotdotpwn', 'deep ../ run', `${'../'.repeat(12)}etc/passwd`, N),
  param('contract', 'an allowed file', 'public/a.txt', ok(`${S}/public/a.txt`)),
  param('contract', 'public itself (** matches it)', 'public', ok(`${S}/public`)),
  param(
    'contract',
    'dot segments that end in public',
    'uploads/x/../../public/./a',
    ok(`${S}/public/a`),
  ),
  param('PayloadsAllTheThings', 'into public, then out', 'public/../../../etc/passwd', N),
  param('contract', 'boundary: public2', 'public2/a', N),
  param('contract', 'boundary: the sibling /srv/root2', '../root2/public/a', N),
  param('contract', 'out of the root and back in', '../root/public/a', ok(`${S}/public/a`)),
  param('PayloadsAllTheThings', '..%5C backslashes', '..%5C..%5C..%5Cetc%5Cpasswd', N),
  param('PayloadsAllTheThings', 'raw backslashes', '..\\..\\etc\\passwd', N),
  param(
    'threat model',
    'backslashes inside public are one name',
    'public/a%5C..%5C..%5Cetc',
    ok(`${S}/public/a\\..\\..\\etc`),
  ),
  param('PayloadsAllTheThings', '....//', '....//....//etc/passwd', N),
  param('PayloadsAllTheThings', '..;/', '..;/..;/etc/passwd', N),
  param('PayloadsAllTheThings', '%2e%2e%2f', '%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd', N),
  param('PayloadsAllTheThings', '%2E%2E/ uppercase', '%2E%2E/%2E%2E/etc/passwd', N),
  param('PayloadsAllTheThings', '..%2f after public', 'public/..%2f..%2f..%2fetc%2fpasswd', N),
  param('PayloadsAllTheThings', '%2e%2e/ after public', 'public/%2e%2e/%2e%2e/etc', N),
  param(
    'PayloadsAllTheThings',
    '%252e double-encoded, at the root',
    '%252e%252e%252f%252e%252e%252fetc%252fpasswd',
    N,
  ),
  param(
    'threat model',
    '%252e double-encoded inside public is a name',
    'public/%252e%252e%252f%252e%252e%252fetc',
    ok(`${S}/public/%2e%2e%2f%2e%2e%2fetc`),
  ),
  param(
    'dotdotpwn',
    '%25252e triple-encoded',
    'public/%25252e%25252e',
    ok(`${S}/public/%252e%252e`),
  ),
  param(
    'PayloadsAllTheThings',
    '%c0%ae overlong dots',
    '%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd',
    BAD_ESCAPE,
  ),
  param('PayloadsAllTheThings', '%c0%af overlong slash', '..%c0%af..%c0%afetc', BAD_ESCAPE),
  param('dotdotpwn', '%e0%80%ae 3-byte overlong', '%e0%80%ae%e0%80%ae/etc', BAD_ESCAPE),
  param('PayloadsAllTheThings', '%u002e (IIS)', '%u002e%u002e%u2215etc', BAD_ESCAPE),
  param('threat model', 'UTF-8 of a lone surrogate', 'public/%ED%A0%80', BAD_ESCAPE),
  param('dotdotpwn', 'malformed escape %zz', 'public/%zz', BAD_ESCAPE),
  param('dotdotpwn', 'truncated escape', 'public/a%', BAD_ESCAPE),
  param(
    'threat model',
    'raw UTF-8 bytes in the target',
    `public/${bytes('．．')}`,
    refused(400, "node's HTTP parser refuses a non-ASCII byte in the request target"),
  ),
  param('PayloadsAllTheThings', 'fullwidth ．．／', pct('．．／．．／etc／passwd'), N),
  param(
    'threat model',
    'fullwidth ．．／ inside public',
    `public/${pct('．．／．．／etc')}`,
    ok(`${S}/public/．．／．．／etc`),
  ),
  param(
    'PayloadsAllTheThings',
    'one dot leader U+2024',
    pct('\u2024\u2024/\u2024\u2024/etc/passwd'),
    N,
  ),
  param(
    'PayloadsAllTheThings',
    'small full stop U+FE52 inside public',
    `public/${pct('\uFE52\uFE52')}`,
    ok(`${S}/public/\uFE52\uFE52`),
  ),
  param('PayloadsAllTheThings', 'division slash U+2215', pct('..\u2215..\u2215etc\u2215passwd'), N),
  param(
    'PayloadsAllTheThings',
    'fullwidth solidus U+FF0F inside public',
    `public/${pct('a\uFF0F..\uFF0F..\uFF0Fetc')}`,
    ok(`${S}/public/a\uFF0F..\uFF0F..\uFF0Fetc`),
  ),
  param(
    'threat model',
    '..／ inside public is one name, and a dotfile',
    `public/${pct('..\uFF0F..\uFF0Fetc')}`,
    N,
  ),
  param('threat model', 'combining mark on ..', pct('..\u0338/etc'), N),
  param(
    'threat model',
    'NFD is checked as NFC',
    'public/cafe%CC%81.txt',
    ok(`${S}/public/caf\u00e9.txt`),
  ),
  param('threat model', 'NFD cannot hide a dotfile', 'public/.e%CC%81nv', N),
  param(
    'threat model',
    'an astral character',
    `public/${pct('\u{1F600}')}`,
    ok(`${S}/public/\u{1F600}`),
  ),
  param('contract', 'a dotfile', 'public/.env', N),
  param('PayloadsAllTheThings', 'NUL %00', 'public/a.txt%00.png', NUL),
  param(
    'PayloadsAllTheThings',
    '%2500 is a name',
    'public/a.txt%2500.png',
    ok(`${S}/public/a.txt%00.png`),
  ),
  param('dotdotpwn', '3 KiB of ../', `${'../'.repeat(1000)}etc/passwd`, N),
  param(
    'threat model',
    '1000 down, 1000 up, into public (5 KiB as sent, short once canonical)',
    `${'a/'.repeat(1000)}${'../'.repeat(1000)}public/x`,
    TOO_LONG,
  ),
  param(
    'dotdotpwn',
    '2000 levels inside public',
    `public/${'a/'.repeat(2000)}x`,
    ok(`${S}/public/${'a/'.repeat(2000)}x`),
  ),
  param(
    'dotdotpwn',
    '600 down, 600 up, into public',
    `${'a/'.repeat(600)}${'../'.repeat(600)}public/x`,
    ok(`${S}/public/x`),
  ),
  param(
    'dotdotpwn',
    'a target over 16 KiB',
    `public/${'a/'.repeat(9000)}`,
    refused(431, "node's HTTP parser: the request head is over its 16 KiB limit"),
  ),
  param('PayloadsAllTheThings', 'C:\\ drive', 'C:%5CWindows%5Cwin.ini', N),
  param('PayloadsAllTheThings', 'UNC \\\\server\\share', '%5C%5Cserver%5Cshare%5Cx', N),
  param('PayloadsAllTheThings', 'file:///etc/passwd', 'file:///etc/passwd', N),
  param('PayloadsAllTheThings', 'absolute /etc/passwd through //', '/etc/passwd', N),
  param('PayloadsAllTheThings', 'absolute %2Fetc%2Fpasswd', '%2Fetc%2Fpasswd', N),
  param('contract', 'absolute, inside the root', '%2Fsrv%2Froot%2Fpublic%2Fa', ok(`${S}/public/a`)),
  param('contract', 'absolute, the sibling root', '%2Fsrv%2Froot2%2Fpublic%2Fa', N),
  param('PayloadsAllTheThings', '~root', '~root', N),
  param('PayloadsAllTheThings', '~/.ssh/id_rsa', '~/.ssh/id_rsa', N),
  param('contract', '. (the root itself)', '.', N),
  param('contract', 'a trailing slash', 'public/a/', ok(`${S}/public/a`)),
  param('contract', 'empty segments', 'public//a', ok(`${S}/public/a`)),
  param('dotdotpwn', 'a # ends the target', 'public/a#/../../../etc/passwd', ok(`${S}/public/a`), {
    value: 'public/a',
  }),
  param('contract', 'an empty wildcard', '', {
    fastify: { value: '', expect: MISSING },
    express: {
      expect: refused(404, 'Express: a wildcard matches one character or more, so no route'),
    },
    why: 'find-my-way matches /files/ with an empty wildcard; path-to-regexp 8 does not',
  }),
];

const UNDER: readonly CorpusRow[] = [
  under('contract', 'a name', 'report.pdf', ok(`${S}/public/report.pdf`)),
  under('PayloadsAllTheThings', '..', '..', N),
  under('PayloadsAllTheThings', '..%2F..%2Fetc%2Fpasswd', '..%2F..%2Fetc%2Fpasswd', N),
  under('PayloadsAllTheThings', '%2E%2E%2F three up', '%2E%2E%2F%2E%2E%2F%2E%2E', N),
  under(
    'contract',
    'a leading / is joined below public',
    '%2Fetc%2Fpasswd',
    ok(`${S}/public/etc/passwd`),
  ),
  under(
    'contract',
    '.. out of public into another allowed folder',
    '..%2Fuploads%2Fa',
    ok(`${S}/uploads/a`),
  ),
  under('contract', '%2e is public itself', '%2e', ok(`${S}/public`)),
  under('PayloadsAllTheThings', '%2e%2e', '%2e%2e', N),
  under('PayloadsAllTheThings', 'NUL', 'a%00', NUL),
  under('threat model', '%252e%252e is a name', '%252e%252e', ok(`${S}/public/%2e%2e`)),
  under('threat model', '..\\..\\ is one name, and a dotfile', '..%5C..%5Cetc', N),
  under(
    'threat model',
    'a\\..\\..\\ is one name',
    'a%5C..%5C..%5Cetc',
    ok(`${S}/public/a\\..\\..\\etc`),
  ),
  under('threat model', 'fullwidth dots are a name', pct('．．'), ok(`${S}/public/．．`)),
  under('contract', 'a dotfile', '.env', N),
  under('PayloadsAllTheThings', '%c0%ae overlong', '%c0%ae%c0%ae', BAD_ESCAPE),
  under('contract', 'an empty segment', '', {
    fastify: { value: '', expect: MISSING },
    express: { expect: refused(404, 'Express: a named param matches one character or more') },
    why: 'find-my-way matches /doc/ with an empty param; path-to-regexp 8 does not',
  }),
  under('dotdotpwn', 'a 101-character name', 'a'.repeat(101), {
    fastify: {
      expect: refused(414, 'Fastify: maxParamLength (100) → FST_ERR_MAX_PARAM_LENGTH'),
    },
    express: { expect: ok(`${S}/public/${'a'.repeat(101)}`) },
    why: 'find-my-way caps a param at 100 characters by default; Express has no cap',
  }),
];

/** node's querystring decodes invalid UTF-8 to U+FFFD; fast-querystring keeps such a value as sent. */
const QUERY_DECODERS =
  "Fastify's fast-querystring keeps a value whose escapes are not valid UTF-8 undecoded; Express's node:querystring decodes the bytes it can (invalid UTF-8 → U+FFFD)";

const QUERIES: readonly CorpusRow[] = [
  query('contract', 'an allowed file', 'path=public/a.txt', ok(`${S}/public/a.txt`)),
  query('PayloadsAllTheThings', '../', 'path=../../../etc/passwd', N),
  query('PayloadsAllTheThings', '%2e%2e%2f', 'path=%2e%2e%2f%2e%2e%2fetc%2fpasswd', N),
  query('PayloadsAllTheThings', 'public%2F..%2F', 'path=public%2F..%2F..%2F..%2Fetc%2Fpasswd', N),
  query('PayloadsAllTheThings', '%252e double-encoded', 'path=%252e%252e%252fetc%252fpasswd', N),
  query(
    'threat model',
    '%252e inside public is a name',
    'path=public/%252e%252e%252f',
    ok(`${S}/public/%2e%2e%2f`),
  ),
  query('PayloadsAllTheThings', '%c0%ae overlong', 'path=%c0%ae%c0%ae/etc/passwd', {
    fastify: { value: '%c0%ae%c0%ae/etc/passwd', expect: N },
    express: { value: '\uFFFD\uFFFD\uFFFD\uFFFD/etc/passwd', expect: N },
    why: QUERY_DECODERS,
  }),
  query('PayloadsAllTheThings', '%c0%ae overlong inside public', 'path=public/%c0%ae%c0%ae', {
    fastify: { value: 'public/%c0%ae%c0%ae', expect: ok(`${S}/public/%c0%ae%c0%ae`) },
    express: {
      value: 'public/\uFFFD\uFFFD\uFFFD\uFFFD',
      expect: ok(`${S}/public/\uFFFD\uFFFD\uFFFD\uFFFD`),
    },
    why: QUERY_DECODERS,
  }),
  query('dotdotpwn', 'one malformed escape', 'path=public%2Fx%zz', {
    fastify: { value: 'public%2Fx%zz', expect: N },
    express: { value: 'public/x%zz', expect: ok(`${S}/public/x%zz`) },
    why: `${QUERY_DECODERS}: one bad escape keeps public%2Fx (one name at the root) in Fastify, and decodes it to public/x in Express`,
  }),
  query('dotdotpwn', '%ff', 'path=%ff', {
    fastify: { value: '%ff', expect: N },
    express: { value: '\uFFFD', expect: N },
    why: QUERY_DECODERS,
  }),
  query('threat model', 'UTF-8 of a lone surrogate', 'path=%ED%A0%80', {
    fastify: { value: '%ED%A0%80', expect: N },
    express: { value: '\uFFFD\uFFFD\uFFFD', expect: N },
    why: QUERY_DECODERS,
  }),
  query('PayloadsAllTheThings', '%u002e (IIS)', 'path=%u002e%u002e%u2215etc', N, {
    value: '%u002e%u002e%u2215etc',
  }),
  query('PayloadsAllTheThings', 'NUL alone', 'path=%00', NUL),
  query('PayloadsAllTheThings', 'NUL extension trick', 'path=public/a.txt%00.png', NUL),
  query('threat model', '%2500 is a name', 'path=public/a%2500', ok(`${S}/public/a%00`)),
  query('PayloadsAllTheThings', 'fullwidth ．．／', `path=${pct('．．／．．／etc／passwd')}`, N),
  query(
    'PayloadsAllTheThings',
    'dot leaders and small full stops inside public',
    `path=public/${pct('\u2024\u2024/\uFE52\uFE52')}`,
    ok(`${S}/public/\u2024\u2024/\uFE52\uFE52`),
  ),
  query('threat model', 'NFD', 'path=public/cafe%CC%81', ok(`${S}/public/caf\u00e9`)),
  query('contract', '+ is a space', 'path=public/a+b', ok(`${S}/public/a b`)),
  query('contract', '%2B is a plus', 'path=public/a%2Bb', ok(`${S}/public/a+b`)),
  query(
    'threat model',
    'a repeated key: every element checked',
    'path=public/a&path=uploads/b',
    ok([`${S}/public/a`, `${S}/uploads/b`]),
  ),
  query('threat model', 'a repeated key, one escapes', 'path=public/a&path=..%2F..%2Fetc', N),
  query('threat model', 'a repeated key, one empty', 'path=public/a&path=', MISSING),
  query('threat model', 'a repeated key, one NUL', 'path=public/a&path=public/b&path=%00', NUL),
  query('contract', 'empty', 'path=', MISSING),
  query('contract', 'a key without =', 'path', MISSING),
  query('contract', 'no query', '', MISSING),
  query('threat model', 'bracket key path[] is another key', 'path[]=public/a', MISSING),
  query('threat model', 'bracket key path[0] is another key', 'path[0]=..%2Fx', MISSING),
  query('contract', 'keys are case-sensitive', 'PATH=public/a', MISSING),
  query('dotdotpwn', 'an encoded key', '%70ath=..%2F..%2Fetc', N),
  query(
    'threat model',
    '__proto__ beside the key',
    '__proto__=..%2Fx&path=public/a',
    ok(`${S}/public/a`),
  ),
  query('PayloadsAllTheThings', 'C:\\', 'path=C:%5CWindows%5Cwin.ini', N),
  query('PayloadsAllTheThings', 'UNC', 'path=%5C%5Cserver%5Cshare', N),
  query('PayloadsAllTheThings', 'file:///etc/passwd', 'path=file:///etc/passwd', N),
  query('PayloadsAllTheThings', 'absolute /etc/passwd', 'path=/etc/passwd', N),
  query('contract', 'absolute, inside the root', 'path=/srv/root/public/a', ok(`${S}/public/a`)),
  query('PayloadsAllTheThings', '~root', 'path=~root', N),
  query('dotdotpwn', '3 KiB of ../', `path=${'../'.repeat(1000)}etc`, N),
  query('contract', 'a dotfile', 'path=public/.htaccess', N),
  query('dotdotpwn', 'a # inside the query', 'path=public/a#/../../etc', {
    fastify: { value: 'public/a#/../../etc', expect: N },
    express: { value: 'public/a', expect: ok(`${S}/public/a`) },
    why: "Fastify's query is everything after the first ?, # included; Express (parseurl) ends the query at #. Each checks what its handler gets",
  }),
  query('PayloadsAllTheThings', ';/ then ..', 'path=public/a;/../../etc', N),
];

const HEADERS: readonly CorpusRow[] = [
  header('contract', 'an allowed file', 'public/a.txt', ok(`${S}/public/a.txt`)),
  header('PayloadsAllTheThings', '../', '../../../etc/shadow', N),
  header('threat model', '%2e%2e%2f is not decoded', '%2e%2e%2f%2e%2e%2fetc%2fpasswd', N),
  header(
    'threat model',
    '%2e%2e%2f inside public is a name',
    'public/%2e%2e%2f%2e%2e%2fetc',
    ok(`${S}/public/%2e%2e%2f%2e%2e%2fetc`),
  ),
  header('PayloadsAllTheThings', 'backslashes', '..\\..\\etc\\passwd', N),
  header(
    'threat model',
    'two header lines are one value',
    ['public/a', '../../etc/passwd'],
    ok(`${S}/public/etc/passwd`),
    { value: 'public/a, ../../etc/passwd' },
  ),
  header(
    'threat model',
    'two header lines, the escaping one first',
    ['../../etc/passwd', 'public/a'],
    N,
    { value: '../../etc/passwd, public/a' },
  ),
  header('threat model', 'UTF-8 bytes of ．．／ (read as latin1)', bytes('．．／．．／etc'), N),
  header(
    'threat model',
    'UTF-8 bytes inside public (read as latin1)',
    `public/${bytes('café')}`,
    ok(`${S}/public/caf\u00c3\u00a9`),
  ),
  header('contract', 'surrounding spaces are trimmed', '  public/a  ', ok(`${S}/public/a`), {
    value: 'public/a',
  }),
  header('contract', 'empty', '', MISSING),
  header('contract', 'absent', [], MISSING, { value: undefined }),
  header(
    'PayloadsAllTheThings',
    'a raw NUL',
    'public/a\0',
    refused(400, "node's HTTP parser refuses a NUL in a header value"),
    { socket: true },
  ),
  header('PayloadsAllTheThings', 'absolute /etc/passwd', '/etc/passwd', N),
  header('contract', 'absolute, inside the root', '/srv/root/public/a', ok(`${S}/public/a`)),
  header('PayloadsAllTheThings', 'file:///etc/passwd', 'file:///etc/passwd', N),
  header('PayloadsAllTheThings', '~root', '~root', N),
  header('dotdotpwn', '9 KiB of ../', `${'../'.repeat(3000)}etc`, TOO_LONG),
  header('threat model', '%00 is three characters', 'public/a%00', ok(`${S}/public/a%00`)),
];

const JSONS: readonly CorpusRow[] = [
  json('contract', 'an allowed file', '{"path":"uploads/a.png"}', ok(`${S}/uploads/a.png`)),
  json('contract', 'write on a read-only rule', '{"path":"public/a.txt"}', M),
  json('PayloadsAllTheThings', '../', '{"path":"../../etc/passwd"}', N),
  json(
    'PayloadsAllTheThings',
    'into uploads, then out',
    '{"path":"uploads/../../../etc/passwd"}',
    N,
  ),
  json('contract', 'out of uploads into public', '{"path":"uploads/../public/a"}', M),
  json('contract', 'boundary: uploads2', '{"path":"uploads2/a"}', N),
  json('PayloadsAllTheThings', 'NUL \\u0000', '{"path":"uploads\\u0000.png"}', NUL),
  json('PayloadsAllTheThings', 'NUL at the end', '{"path":"uploads/a\\u0000"}', NUL),
  json('threat model', 'a lone high surrogate', '{"path":"uploads/\\ud800"}', BAD_UNICODE),
  json('threat model', 'a reversed pair', '{"path":"uploads/\\udc00\\ud83d.png"}', BAD_UNICODE),
  json('threat model', 'NUL before a lone surrogate', '{"path":"\\u0000\\ud800"}', NUL),
  json(
    'threat model',
    'a well-formed pair',
    '{"path":"uploads/\\ud83d\\ude00.png"}',
    ok(`${S}/uploads/\u{1F600}.png`),
  ),
  json('threat model', 'null', '{"path":null}', NOT_STRING),
  json('threat model', 'a number', '{"path":42}', NOT_STRING),
  json('threat model', 'true', '{"path":true}', NOT_STRING),
  json('threat model', '1e400 (Infinity)', '{"path":1e400}', NOT_STRING),
  json('threat model', 'an empty object', '{"path":{}}', NOT_STRING),
  json('threat model', 'an array-like object', '{"path":{"0":"uploads/a"}}', NOT_STRING),
  json('threat model', 'an object with toString', '{"path":{"toString":"uploads/a"}}', NOT_STRING),
  json(
    'contract',
    'an array: every element checked',
    '{"path":["uploads/a","uploads/b"]}',
    ok([`${S}/uploads/a`, `${S}/uploads/b`]),
  ),
  json('contract', 'an array of one', '{"path":["uploads/a"]}', ok([`${S}/uploads/a`])),
  json('contract', 'an empty array', '{"path":[]}', MISSING),
  json('threat model', 'a nested array', '{"path":[["uploads/a"]]}', NOT_STRING),
  json('threat model', 'an array holding null', '{"path":["uploads/a",null]}', NOT_STRING),
  json('threat model', 'an array, one escapes', '{"path":["uploads/a","../x"]}', N),
  json('threat model', 'an array, one empty', '{"path":["uploads/a",""]}', MISSING),
  json('contract', 'an array, one read-only', '{"path":["uploads/a","public/b"]}', M),
  json('contract', 'empty', '{"path":""}', MISSING),
  json('contract', 'the key absent', '{}', MISSING),
  json('threat model', 'the body is an array', '[]', MISSING),
  json('threat model', 'the body is an array of objects', '[{"path":"uploads/a"}]', MISSING),
  json('threat model', '__proto__ holding the key', '{"__proto__":{"path":"uploads/a"}}', {
    fastify: { expect: FASTIFY_PROTO },
    express: { expect: MISSING },
    why: 'Fastify refuses the body before pathgate; Express (JSON.parse) makes __proto__ an own key, and path is not an own key of the body',
  }),
  json(
    'threat model',
    '__proto__ beside the key',
    '{"path":"uploads/a","__proto__":{"path":"../x"}}',
    {
      fastify: { expect: FASTIFY_PROTO },
      express: { expect: ok(`${S}/uploads/a`) },
      why: 'Fastify refuses the body before pathgate; in Express only the own path key counts',
    },
  ),
  json(
    'threat model',
    'constructor.prototype holding the key',
    '{"constructor":{"prototype":{"path":"uploads/a"}}}',
    {
      fastify: { expect: FASTIFY_PROTO },
      express: { expect: MISSING },
      why: 'Fastify refuses constructor.prototype before pathgate; in Express path is not an own key',
    },
  ),
  json('threat model', 'constructor as a key', '{"constructor":"uploads/a"}', MISSING),
  json('threat model', '"__proto__" as a value is a name', '{"path":"__proto__"}', N),
  json(
    'threat model',
    'uploads/__proto__ is a name',
    '{"path":"uploads/__proto__"}',
    ok(`${S}/uploads/__proto__`),
  ),
  json(
    'threat model',
    'a duplicate key: the last wins',
    '{"path":"uploads/a","path":"../../x"}',
    N,
  ),
  json(
    'threat model',
    'a duplicate key: the last wins (allowed)',
    '{"path":"../../x","path":"uploads/a"}',
    ok(`${S}/uploads/a`),
  ),
  json(
    'threat model',
    '%2e%2e%2f is a name',
    '{"path":"uploads/%2e%2e%2f%2e%2e%2fetc"}',
    ok(`${S}/uploads/%2e%2e%2f%2e%2e%2fetc`),
  ),
  json(
    'PayloadsAllTheThings',
    '%2e%2e%2f at the root',
    '{"path":"%2e%2e%2f%2e%2e%2fetc%2fpasswd"}',
    N,
  ),
  json(
    'threat model',
    'fullwidth ．．／ inside uploads',
    '{"path":"uploads/\\uff0e\\uff0e\\uff0fetc"}',
    ok(`${S}/uploads/\uFF0E\uFF0E\uFF0Fetc`),
  ),
  json(
    'PayloadsAllTheThings',
    'fullwidth dots at the root',
    '{"path":"\\uff0e\\uff0e/\\uff0e\\uff0e/etc/passwd"}',
    N,
  ),
  json(
    'threat model',
    'NFD',
    '{"path":"uploads/cafe\\u0301.png"}',
    ok(`${S}/uploads/caf\u00e9.png`),
  ),
  json(
    'PayloadsAllTheThings',
    'dot leaders, small full stops, division slash',
    '{"path":"uploads/\\u2024\\u2024/\\ufe52\\ufe52\\u2215x"}',
    ok(`${S}/uploads/\u2024\u2024/\uFE52\uFE52\u2215x`),
  ),
  json(
    'PayloadsAllTheThings',
    'C:\\ drive',
    '{"path":"C:\\\\Windows\\\\System32\\\\config\\\\SAM"}',
    N,
  ),
  json('PayloadsAllTheThings', 'UNC', '{"path":"\\\\\\\\server\\\\share\\\\x"}', N),
  json(
    'threat model',
    'backslashes inside uploads are one name',
    '{"path":"uploads/a\\\\..\\\\..\\\\x"}',
    ok(`${S}/uploads/a\\..\\..\\x`),
  ),
  json('PayloadsAllTheThings', 'file:///etc/passwd', '{"path":"file:///etc/passwd"}', N),
  json('PayloadsAllTheThings', 'absolute /etc/passwd', '{"path":"/etc/passwd"}', N),
  json(
    'contract',
    'absolute, inside the root',
    '{"path":"/srv/root/uploads/a"}',
    ok(`${S}/uploads/a`),
  ),
  json('PayloadsAllTheThings', '~root', '{"path":"~root"}', N),
  json('contract', 'uploads/. (uploads itself)', '{"path":"uploads/."}', ok(`${S}/uploads`)),
  json('contract', 'uploads/.. (the root)', '{"path":"uploads/.."}', N),
  json('dotdotpwn', '15 KiB of ../', `{"path":"${'../'.repeat(5000)}etc/passwd"}`, TOO_LONG),
  json(
    'threat model',
    'a 4,096-character value (the longest checked)',
    `{"path":"uploads/${'a'.repeat(4088)}"}`,
    ok(`${S}/uploads/${'a'.repeat(4088)}`),
  ),
  json(
    'threat model',
    'a 4,097-character value',
    `{"path":"uploads/${'a'.repeat(4089)}"}`,
    TOO_LONG,
  ),
  json(
    'threat model',
    '4,096 characters, 8 KiB of UTF-8 (counted in characters)',
    `{"path":"uploads/${'é'.repeat(4088)}"}`,
    ok(`${S}/uploads/${'é'.repeat(4088)}`),
  ),
  json(
    'threat model',
    '40,000 U+0344 (costly to normalize; below the 100 KB body limit of express.json())',
    `{"path":"uploads/${'\u0344'.repeat(40_000)}"}`,
    TOO_LONG,
  ),
  json('contract', 'a byte order mark', '\uFEFF{"path":"uploads/a"}', ok(`${S}/uploads/a`), {
    value: { path: 'uploads/a' },
  }),
  json('threat model', 'the body is a string', '"uploads/a"', {
    fastify: { expect: MISSING },
    express: {
      expect: refused(400, 'express.json() is strict: only an object or an array at the top'),
    },
    why: "Fastify's JSON parser accepts any JSON value (a string has no path key); express.json() refuses it",
  }),
  json('threat model', 'the body is null', 'null', {
    fastify: { expect: MISSING },
    express: { expect: refused(400, 'express.json() is strict: only an object or an array') },
    why: "Fastify's JSON parser accepts null; express.json() refuses it",
  }),
  json('contract', 'an empty body', '', {
    fastify: { expect: refused(400, 'Fastify: FST_ERR_CTP_EMPTY_JSON_BODY') },
    express: { value: {}, expect: MISSING },
    why: 'Fastify refuses an empty JSON body; express.json() makes it {}',
  }),
  json(
    'contract',
    'invalid JSON',
    '{"path":',
    refused(400, 'both JSON parsers refuse it (FST_ERR_CTP_INVALID_JSON_BODY; body-parser 400)'),
  ),
  json(
    'contract',
    'no content-type',
    '{"path":"uploads/a"}',
    {
      fastify: { expect: refused(415, 'Fastify: FST_ERR_CTP_INVALID_MEDIA_TYPE') },
      express: { value: undefined, expect: MISSING },
      why: 'Fastify refuses a body without a content-type; Express runs no parser, so req.body is undefined',
    },
    { contentType: null },
  ),
  json('contract', 'APPLICATION/JSON (types are case-insensitive)', '{"path":"../x"}', N, {
    contentType: 'APPLICATION/JSON',
  }),
  json(
    'contract',
    'a +json type',
    '{"path":"../x"}',
    {
      fastify: { expect: refused(415, 'Fastify: FST_ERR_CTP_INVALID_MEDIA_TYPE') },
      express: { value: undefined, expect: MISSING },
      why: 'Fastify has no parser for application/vnd.api+json; express.json() only parses application/json, so req.body is undefined',
    },
    { contentType: 'application/vnd.api+json' },
  ),
  json(
    'contract',
    'charset=utf-16 on a UTF-8 body',
    '{"path":"uploads/a"}',
    {
      fastify: { expect: ok(`${S}/uploads/a`) },
      express: { expect: refused(400, 'body-parser decodes the bytes as UTF-16: not JSON') },
      why: "Fastify's JSON parser ignores the charset; body-parser honours it",
    },
    { contentType: 'application/json; charset=utf-16' },
  ),
  json(
    'contract',
    'text/plain',
    '{"path":"uploads/a"}',
    {
      fastify: { value: '{"path":"uploads/a"}', expect: MISSING },
      express: { value: undefined, expect: MISSING },
      why: "Fastify's text/plain parser makes the body a string; Express has no text parser here",
    },
    { contentType: 'text/plain' },
  ),
];

const DEEP: readonly CorpusRow[] = [
  deep('contract', 'an allowed file', '{"files":[{"path":"uploads/a"}]}', ok(`${S}/uploads/a`)),
  deep('PayloadsAllTheThings', '../', '{"files":[{"path":"../../etc/passwd"}]}', N),
  deep('contract', 'write on a read-only rule', '{"files":[{"path":"public/a"}]}', M),
  deep('contract', 'the index past the end', '{"files":[]}', MISSING),
  deep(
    'threat model',
    'an object instead of an array',
    '{"files":{"0":{"path":"uploads/a"}}}',
    MISSING,
  ),
  deep('threat model', 'null at the index', '{"files":[null]}', MISSING),
  deep('threat model', 'an array at the index', '{"files":[[{"path":"uploads/a"}]]}', MISSING),
  deep('threat model', 'a string instead of an array', '{"files":"uploads/a"}', MISSING),
  deep(
    'contract',
    'only index 0 is selected',
    '{"files":[{"path":"uploads/a"},{"path":"../x"}]}',
    ok(`${S}/uploads/a`),
  ),
  deep(
    'contract',
    'an array value',
    '{"files":[{"path":["uploads/a","uploads/b"]}]}',
    ok([`${S}/uploads/a`, `${S}/uploads/b`]),
  ),
  deep('threat model', 'null', '{"files":[{"path":null}]}', NOT_STRING),
  deep('threat model', 'a lone surrogate', '{"files":[{"path":"uploads/\\ud800"}]}', BAD_UNICODE),
  deep(
    'threat model',
    '__proto__ holding the key',
    '{"files":[{"__proto__":{"path":"uploads/a"}}]}',
    {
      fastify: { expect: FASTIFY_PROTO },
      express: { expect: MISSING },
      why: 'Fastify refuses the body before pathgate; in Express path is not an own key',
    },
  ),
  deep('threat model', '__proto__ as the value', '{"files":[{"path":{"__proto__":"x"}}]}', {
    fastify: { expect: FASTIFY_PROTO },
    express: { expect: NOT_STRING },
    why: 'Fastify refuses the body before pathgate; in Express the value is an object',
  }),
  deep(
    'threat model',
    'constructor.prototype beside the key',
    '{"files":[{"constructor":{"prototype":{}},"path":"uploads/a"}]}',
    {
      fastify: { expect: FASTIFY_PROTO },
      express: { expect: ok(`${S}/uploads/a`) },
      why: 'Fastify refuses constructor.prototype before pathgate; Express keeps it as data',
    },
  ),
];

const BUSBOY_FILENAME_STAR =
  '@fastify/busboy keeps filename= when filename*= is also given; busboy 1 (multer) takes filename*=. Each adapter checks the name its handler gets';

/** Express README, "Limitations": busboy 1 skips such a part without an event. */
const BUSBOY_SKIPS =
  '@fastify/busboy hands over an empty filename*= as "" and a bad escape as text; busboy 1 (multer) finds the Content-Disposition malformed and skips the whole part without an event, so neither multer nor pathgate sees it';

const BUSBOY_CR_LF =
  'busboy 1 refuses a CR or LF in a part header value (Malformed part header); RFC 9110 5.5 lets a recipient reject it';
const FASTIFY_DROPS_PART =
  '@fastify/busboy stops reading the part header at a bare CR or LF without an error, so the part has no Content-Disposition and is dropped unseen: the required file is missing';

const UPLOADS: readonly CorpusRow[] = [
  upload('contract', 'an allowed name', file('a.png'), ok(`${S}/uploads/a.png`), {
    value: ['a.png'],
  }),
  upload('PayloadsAllTheThings', '../', file('../../etc/passwd'), N, {
    value: ['../../etc/passwd'],
  }),
  upload('PayloadsAllTheThings', 'one level up', file('../a.png'), N, { value: ['../a.png'] }),
  upload('dotdotpwn', 'down, then further up', file('sub/../../x'), N, { value: ['sub/../../x'] }),
  upload('contract', 'down and back', file('sub/../a.png'), ok(`${S}/uploads/a.png`), {
    value: ['sub/../a.png'],
  }),
  upload('PayloadsAllTheThings', "filename*=UTF-8''..%2F..%2Fx", file5987('..%2F..%2Fx'), N, {
    value: ['../../x'],
  }),
  upload(
    'PayloadsAllTheThings',
    "filename*=UTF-8''..%2F..%2Fetc%2Fpasswd",
    file5987('..%2F..%2Fetc%2Fpasswd'),
    N,
    { value: ['../../etc/passwd'] },
  ),
  upload('threat model', 'filename= is not percent-decoded (a dotfile)', file('..%2F..%2Fx'), N, {
    value: ['..%2F..%2Fx'],
  }),
  upload(
    'threat model',
    'filename= is not percent-decoded',
    file('a%2F..%2F..%2Fx'),
    ok(`${S}/uploads/a%2F..%2F..%2Fx`),
    { value: ['a%2F..%2F..%2Fx'] },
  ),
  upload(
    'threat model',
    'filename*= is decoded once',
    file5987('%252e%252e%252fx'),
    ok(`${S}/uploads/%2e%2e%2fx`),
    { value: ['%2e%2e%2fx'] },
  ),
  upload('PayloadsAllTheThings', '..\\..\\ is one name, and a dotfile', file('..\\..\\x'), N, {
    value: ['..\\..\\x'],
  }),
  upload('PayloadsAllTheThings', '..%5C through filename*=', file5987('..%5C..%5Cx'), N, {
    value: ['..\\..\\x'],
  }),
  upload(
    'threat model',
    'backslashes are one name',
    file('a\\..\\..\\x'),
    ok(`${S}/uploads/a\\..\\..\\x`),
    { value: ['a\\..\\..\\x'] },
  ),
  upload(
    'PayloadsAllTheThings',
    'C:\\ drive',
    file('C:\\Windows\\win.ini'),
    ok(`${S}/uploads/C:\\Windows\\win.ini`),
    { value: ['C:\\Windows\\win.ini'] },
  ),
  upload(
    'PayloadsAllTheThings',
    'UNC through filename*=',
    file5987('%5C%5Cserver%5Cshare%5Cx'),
    ok(`${S}/uploads/\\\\server\\share\\x`),
    { value: ['\\\\server\\share\\x'] },
  ),
  upload(
    'contract',
    'a leading / is joined below uploads',
    file('/etc/passwd'),
    ok(`${S}/uploads/etc/passwd`),
    { value: ['/etc/passwd'] },
  ),
  upload(
    'contract',
    'a leading / through filename*=',
    file5987('%2Fetc%2Fpasswd'),
    ok(`${S}/uploads/etc/passwd`),
    { value: ['/etc/passwd'] },
  ),
  upload(
    'PayloadsAllTheThings',
    'file:///etc/passwd',
    file('file:///etc/passwd'),
    ok(`${S}/uploads/file:/etc/passwd`),
    { value: ['file:///etc/passwd'] },
  ),
  upload('PayloadsAllTheThings', '~root', file('~root'), ok(`${S}/uploads/~root`), {
    value: ['~root'],
  }),
  upload('contract', '. names the directory', file('.'), MISSING, { value: ['.'] }),
  upload('contract', 'sub/.. names the directory', file('sub/..'), MISSING, { value: ['sub/..'] }),
  upload('PayloadsAllTheThings', '..', file('..'), N, { value: ['..'] }),
  upload('contract', 'an empty filename', file(''), MISSING, { value: [''] }),
  upload('contract', 'a trailing slash names a folder', file('sub/'), MISSING, {
    value: ['sub/'],
  }),
  upload('contract', 'a file part without a filename', 'name="upload"', MISSING, {
    value: [['upload', undefined]],
  }),
  upload(
    'contract',
    'a file part without a filename, then an allowed one',
    ['name="upload"', file('a.png')],
    MISSING,
    { value: [['upload', undefined], 'a.png'] },
  ),
  upload('contract', 'an empty filename*=', file5987(''), {
    fastify: { value: [''], expect: MISSING },
    express: { value: [], expect: MISSING },
    why: BUSBOY_SKIPS,
  }),
  upload('contract', 'an empty filename*=, then an allowed file', [file5987(''), file('a.png')], {
    fastify: { value: ['', 'a.png'], expect: MISSING },
    express: { value: ['a.png'], expect: ok(`${S}/uploads/a.png`) },
    why: BUSBOY_SKIPS,
  }),
  upload(
    'dotdotpwn',
    'a malformed filename*=, then an allowed file',
    [file5987('%zz'), file('a.png')],
    {
      fastify: {
        value: ['%zz', 'a.png'],
        expect: ok([`${S}/uploads/%zz`, `${S}/uploads/a.png`]),
      },
      express: { value: ['a.png'], expect: ok(`${S}/uploads/a.png`) },
      why: BUSBOY_SKIPS,
    },
  ),
  upload('PayloadsAllTheThings', 'a raw NUL', file('a\0.png'), {
    fastify: { value: ['a\0.png'], expect: NUL },
    express: {
      expect: refused(400, 'busboy 1 refuses a NUL in a part header (Malformed part header)'),
    },
    why: '@fastify/busboy hands the NUL over; busboy 1 refuses the part header before multer',
  }),
  upload('threat model', 'a bare CR in filename=', file('a\r.png'), {
    fastify: { value: [], expect: MISSING },
    express: { expect: refused(400, BUSBOY_CR_LF) },
    why: FASTIFY_DROPS_PART,
  }),
  upload('threat model', 'a bare LF in filename*=', file5987('x').replace("''", "''a\n"), {
    fastify: { value: [], expect: MISSING },
    express: { expect: refused(400, BUSBOY_CR_LF) },
    why: FASTIFY_DROPS_PART,
  }),
  upload('threat model', 'a CRLF inside the quoted filename=', file('a\r\nb.png'), {
    fastify: { value: ['a'], expect: ok(`${S}/uploads/a`) },
    express: { expect: refused(400, BUSBOY_CR_LF) },
    why: '@fastify/busboy ends the header line at the CRLF: the part is named "a", the name pathgate checks and the handler gets',
  }),
  upload('PayloadsAllTheThings', 'NUL through filename*=', file5987('a%00.png'), NUL, {
    value: ['a\0.png'],
  }),
  upload(
    'threat model',
    '%00 in filename= is three characters',
    file('a.png%00.txt'),
    ok(`${S}/uploads/a.png%00.txt`),
    { value: ['a.png%00.txt'] },
  ),
  upload(
    'PayloadsAllTheThings',
    'fullwidth ．．／',
    file5987('%EF%BC%8E%EF%BC%8E%EF%BC%8Fx'),
    ok(`${S}/uploads/\uFF0E\uFF0E\uFF0Fx`),
    { value: ['\uFF0E\uFF0E\uFF0Fx'] },
  ),
  upload(
    'PayloadsAllTheThings',
    'dot leaders and a division slash',
    file5987('%E2%80%A4%E2%80%A4%E2%88%95x'),
    ok(`${S}/uploads/\u2024\u2024\u2215x`),
    { value: ['\u2024\u2024\u2215x'] },
  ),
  upload(
    'threat model',
    'NFD bytes are checked as NFC',
    file(bytes('cafe\u0301.png')),
    ok(`${S}/uploads/caf\u00e9.png`),
    { value: ['cafe\u0301.png'] },
  ),
  upload('threat model', 'NFD cannot hide a dotfile', file(bytes('.e\u0301nv')), N, {
    value: ['.e\u0301nv'],
  }),
  upload('contract', 'a dotfile', file('.htaccess'), N, { value: ['.htaccess'] }),
  upload(
    'PayloadsAllTheThings',
    'overlong %c0%ae through filename*= (U+FFFD)',
    file5987('%c0%ae%c0%ae%2Fx'),
    ok(`${S}/uploads/\uFFFD\uFFFD\uFFFD\uFFFD/x`),
    { value: ['\uFFFD\uFFFD\uFFFD\uFFFD/x'] },
  ),
  upload(
    'threat model',
    'UTF-8 of a lone surrogate (U+FFFD)',
    file5987('%ED%A0%80'),
    ok(`${S}/uploads/\uFFFD\uFFFD\uFFFD`),
    { value: ['\uFFFD\uFFFD\uFFFD'] },
  ),
  upload(
    'threat model',
    'filename= then filename*=',
    `name="upload"; filename="ok.png"; filename*=UTF-8''..%2F..%2Fx`,
    {
      fastify: { value: ['ok.png'], expect: ok(`${S}/uploads/ok.png`) },
      express: { value: ['../../x'], expect: N },
      why: BUSBOY_FILENAME_STAR,
    },
  ),
  upload('dotdotpwn', 'a malformed filename*=', file5987('%zz'), {
    fastify: { value: ['%zz'], expect: ok(`${S}/uploads/%zz`) },
    express: { value: [], expect: MISSING },
    why: BUSBOY_SKIPS,
  }),
  upload(
    'contract',
    'a file in an undeclared field',
    'name="other"; filename="a.png"',
    deny('unexpected-file', 'file'),
    { value: [['other', 'a.png']] },
  ),
  upload('threat model', 'a file in the field __proto__', 'name="__proto__"; filename="a.png"', {
    fastify: {
      expect: refused(400, '@fastify/multipart refuses a __proto__ field (FST_PROTO_VIOLATION)'),
    },
    express: { value: [['__proto__', 'a.png']], expect: deny('unexpected-file', 'file') },
    why: '@fastify/multipart refuses the field name before pathgate; multer hands the part over',
  }),
  upload(
    'contract',
    'field names are case-sensitive',
    'name="UPLOAD"; filename="a.png"',
    deny('unexpected-file', 'file'),
    { value: [['UPLOAD', 'a.png']] },
  ),
  upload('contract', 'a file part without a field name', 'filename="a.png"', {
    fastify: { value: [[undefined, 'a.png']], expect: deny('unexpected-file', 'file') },
    express: {
      expect: refused(
        400,
        'multer refuses a part without a field name (MISSING_FIELD_NAME) before any fileFilter; the adapter makes it a 400',
      ),
    },
    why: '@fastify/multipart hands the part over without a field name; multer aborts the upload first',
  }),
  upload('PayloadsAllTheThings', 'FILENAME= in capitals', 'name="upload"; FILENAME="../../x"', N, {
    value: ['../../x'],
  }),
  upload(
    'threat model',
    'a second filename= is ignored',
    'name="upload"; filename="a.png"; filename="../../x"',
    ok(`${S}/uploads/a.png`),
    { value: ['a.png'] },
  ),
  upload('contract', 'Multipart/Form-Data in capitals', file('../../x'), N, {
    value: ['../../x'],
    contentType: MULTIPART_TYPE.replace('multipart/form-data', 'Multipart/Form-Data'),
  }),
  upload('threat model', 'two files, the second escapes', [file('a.png'), file('../../b')], N, {
    value: ['a.png', '../../b'],
  }),
  upload(
    'contract',
    'two allowed files',
    [file('a.png'), file('b.png')],
    ok([`${S}/uploads/a.png`, `${S}/uploads/b.png`]),
    { value: ['a.png', 'b.png'] },
  ),
  upload(
    'threat model',
    'an allowed file, then one in an undeclared field',
    [file('a.png'), 'name="other"; filename="b.png"'],
    deny('unexpected-file', 'file'),
    { value: ['a.png', ['other', 'b.png']] },
  ),
  upload(
    'dotdotpwn',
    'a 300-character name',
    file(`${'a'.repeat(300)}.png`),
    ok(`${S}/uploads/${'a'.repeat(300)}.png`),
    { value: [`${'a'.repeat(300)}.png`] },
  ),
  upload(
    'threat model',
    'a 5,000-character name',
    file(`${'a'.repeat(4996)}.png`),
    deny('path-too-long', 'file upload'),
    { value: [`${'a'.repeat(4996)}.png`] },
  ),
];

const FAKE_FILES: readonly CorpusRow[] = [
  uploadJson(
    'threat model',
    'a JSON file part with a pathgatePath',
    '{"upload":{"type":"file","fieldname":"upload","filename":"a.png","pathgatePath":"/srv/root/uploads/a.png"}}',
    MISSING,
  ),
  uploadJson(
    'threat model',
    'a JSON filename that escapes',
    '{"upload":{"filename":"../../etc/passwd"}}',
    MISSING,
  ),
  uploadJson('contract', 'an empty JSON object', '{}', MISSING),
  uploadJson(
    'threat model',
    'a JSON array of parts',
    '[{"type":"file","filename":"a.png"}]',
    MISSING,
  ),
];

export const CORPUS: readonly CorpusRow[] = [
  ...PARAMS,
  ...UNDER,
  ...QUERIES,
  ...HEADERS,
  ...JSONS,
  ...DEEP,
  ...UPLOADS,
  ...FAKE_FILES,
];

// ---- reading a row --------------------------------------------------------------

/** The row's value and answer for one framework. */
export function sideOf(row: CorpusRow, framework: 'fastify' | 'express'): Side {
  return 'expect' in row ? row : row[framework];
}

/** What the framework hands pathgate for this row (see `Side.value`). */
export function handedValue(row: CorpusRow, side: Side): unknown {
  if ('value' in side) return side.value;
  const raw = row.raw;
  if (typeof raw !== 'string') throw new TypeError(`${row.name}: give the value`);
  switch (row.at) {
    case 'param':
    case 'param-under':
      return decodeURIComponent(raw);
    case 'query': {
      const values = new URLSearchParams(raw).getAll('path');
      return values.length <= 1 ? values[0] : values;
    }
    case 'header':
      return raw;
    case 'json':
    case 'json-deep':
    case 'upload-json':
      return JSON.parse(raw);
    case 'multipart':
      throw new TypeError(`${row.name}: give the file parts`);
  }
}

/** The file parts of a multipart value, as [field, filename]. */
export function fileParts(value: unknown): (readonly [string | undefined, string | undefined])[] {
  return (value as readonly FilePart[]).map((part) =>
    typeof part === 'string' ? (['upload', part] as const) : part,
  );
}

/** The request that carries the row's raw piece, for node:http; or the head for a plain socket. */
export function requestOf(row: CorpusRow): { sent: Sent } | { head: string } {
  const { route } = LOCATIONS[row.at];
  const raw = row.raw;
  const one = typeof raw === 'string' ? raw : undefined;
  switch (row.at) {
    case 'param':
      return { sent: { path: `/files/${one}` } };
    case 'param-under':
      return { sent: { path: `/doc/${one}` } };
    case 'query':
      return { sent: { path: one === '' ? '/q' : `/q?${one}` } };
    case 'header':
      if (row.socket) return { head: `GET ${route.url} HTTP/1.1\r\nhost: x\r\nx-file: ${one}` };
      // An empty array sends no x-file line at all.
      if (Array.isArray(raw) && raw.length === 0) return { sent: { path: route.url } };
      return { sent: { path: route.url, headers: { 'x-file': raw as string | string[] } } };
    case 'json':
    case 'json-deep':
    case 'upload-json': {
      const type = row.contentType === undefined ? 'application/json' : row.contentType;
      const headers = type === null ? {} : { 'content-type': type };
      return { sent: { method: 'POST', path: route.url, headers, body: Buffer.from(one ?? '') } };
    }
    case 'multipart': {
      const body = multipartBody(typeof raw === 'string' ? [raw] : raw);
      return {
        sent: {
          method: 'POST',
          path: route.url,
          headers: { 'content-type': row.contentType ?? MULTIPART_TYPE },
          body,
        },
      };
    }
  }
}

/** The core's answer: allowed with `request.pathgate`, or denied. */
export type Decision = { status: 200; info: PathgateInfo } | { status: 403; denial: PathDenial };

/**
 * The core's decision for a value at a location (the value a framework
 * hands over, as in `Side.value`), through the route's compiled guard:
 * what both adapters must answer for it.
 */
export function decide(at: LocationName, value: unknown): Decision {
  const location: Location = LOCATIONS[at];
  const { route } = location;
  const guard = compileRouteGuard(
    policy,
    { mode: route.mode, paths: route.paths },
    `${route.method} ${route.url}`,
  );
  const info = guard.newInfo();
  if (location.source === 'files') {
    // A JSON body carries no file part, whatever it holds.
    const parts = at === 'multipart' ? fileParts(value) : [];
    for (const [field, filename] of parts) {
      // A part without a field name is still checked (and belongs to no declared field).
      const result = guard.checkFile(field as string, filename);
      if (!result.ok) return { status: 403, denial: result.denial };
      if (result.file) info.files.push(result.file); // else an optional file's nameless part, let go
    }
    const end = guard.checkMissingFiles(info.files);
    return end.ok ? { status: 200, info } : { status: 403, denial: end.denial };
  }
  const from =
    location.source === 'body' ? value : value === undefined ? {} : { [location.key]: value };
  const result = guard.checkRequest({ [location.source]: from }, info);
  return result.ok ? { status: 200, info } : { status: 403, denial: result.denial };
}

/** The canonical paths an allowed request got, where the location puts them (files: a list). */
export function pathsOf(at: LocationName, info: PathgateInfo): unknown {
  const location: Location = LOCATIONS[at];
  if (location.source === 'files') return info.files.map((f) => f.path);
  return info[location.source][location.key];
}
