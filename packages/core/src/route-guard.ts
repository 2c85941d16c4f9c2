import { ADAPTER_OPTIONS } from './adapter-options.js';
import { canonicalizeValue, isWithin } from './canonicalize.js';
import {
  type CheckResult,
  compiledOf,
  type DenyReason,
  decide,
  type FsAccessMode,
} from './check-fs.js';
import { readOwn, setOwn } from './own-key.js';
import type { CompiledPolicy, PermissionPolicy } from './policy.js';
import { checkRecordKeys } from './record-keys.js';
import { recordView } from './record-view.js';
import {
  type CompiledSpec,
  compileSpec,
  type PathSource,
  type RouteGuardOptions,
} from './route-spec.js';
import { type CompiledSelector, MISSING, ownValue, select, selectedValues } from './selector.js';

/** Reasons a request is denied: the core's, plus the adapters' own three. */
export type GuardDenyReason = DenyReason | 'missing-path' | 'unexpected-file' | 'path-too-long';

/**
 * The longest value a guard checks, in UTF-16 code units as sent (before an
 * `under` join). Past it a value holds at least 4,097 bytes of UTF-8: more
 * than any path Linux opens (PATH_MAX, 4,096 with its NUL). A client chooses
 * the length, and canonicalizing and matching cost grows with it (a 1 MiB
 * body field: 0.3 s of NFC, or 1.7 s under 100 `**` rules), so the guard
 * refuses it before either.
 */
export const MAX_PATH_LENGTH = 4096;

/**
 * Why a request was denied. `result` explains it for logs: never send it to
 * a client (absent, or `undefined`, where no policy check decided).
 */
export interface PathDenial {
  readonly reason: GuardDenyReason;
  /** The spec that denied: `body.from`, `params.*`, `file avatar`. Safe to show. */
  readonly label: string;
  readonly result?: CheckResult | undefined;
}

/**
 * A file part in a field the route does not declare. Adapters give it too
 * for a part their parser holds that never reached `checkFile`.
 */
export const UNEXPECTED_FILE: PathDenial = Object.freeze({
  reason: 'unexpected-file',
  label: 'file',
});

/** A file part that passed, with the canonical path it must be written to. */
export interface CheckedFile {
  readonly field: string;
  readonly filename: string;
  readonly path: string;
}

/** The canonical paths of one source, by selector: what pathgate checked, read-only. */
export type CheckedPaths = Readonly<Record<string, string | string[]>>;

/** The canonical paths a handler gets (`request.pathgate`): by source, then selector. */
export interface PathgateInfo {
  readonly mode: FsAccessMode;
  readonly params: CheckedPaths;
  readonly query: CheckedPaths;
  readonly body: CheckedPaths;
  readonly headers: CheckedPaths;
  readonly files: readonly CheckedFile[];
}

/** The `PathgateInfo` an adapter fills for one request: it adds the accepted files. */
export interface RecordingInfo extends PathgateInfo {
  readonly files: CheckedFile[];
}

/**
 * The record of a source the route declares nothing from: one shared, empty
 * and frozen, so a request allocates records only for what it checks.
 */
const NOTHING_CHECKED: CheckedPaths = Object.freeze({});

/**
 * Makes a record of checked paths: a plain object (its prototype is
 * `Object.prototype`) whose hidden classes are its own. Storing a path adds
 * a property under a key the route chose, and V8 looks that key up among
 * the shapes grown from the record's first one: for `{}`, the shapes of
 * every object built up from an empty literal, `JSON.parse`'s included.
 * From cold caches that lookup cost about 100 ns more a request
 * (bench/README.md, "Records of checked paths").
 */
function CheckedRecord(): void {}
CheckedRecord.prototype = Object.prototype;
const newRecord = (): Record<string, string | string[]> =>
  new (CheckedRecord as unknown as new () => Record<string, string | string[]>)();

/** Sets `key` as an own property holding undefined: an optional value that is missing. */
const setUndefined = (record: CheckedPaths, key: string): void =>
  setOwn(record as Record<string, string | undefined>, key, undefined);

/** The request parts a guard reads; adapters pass what their framework parsed. */
export interface RequestValues {
  params?: unknown;
  query?: unknown;
  body?: unknown;
  headers?: unknown;
}

/** How an adapter's framework hands its values over (`compileRouteGuard`'s last argument). */
export interface GuardSettings {
  /**
   * A params value that is an array is one path's segments, joined with `/`
   * (Express 5's named wildcard, `/files/*path`), not a list of paths: the
   * adapter can then pass its request as it is, with no joined copy.
   */
  readonly paramSegments?: boolean | undefined;
  /**
   * A `host` header spec reads `:authority` when no `host` header came
   * (HTTP/2), as Fastify's `request.host` does: the value checked is the one
   * the handler reads there.
   */
  readonly authorityHost?: boolean | undefined;
}

/**
 * `params` with its `key` joined when it holds a wildcard's segments: the
 * rare multi-step selector on a segmented param (`['path', 0]`) then walks
 * one path's text, as a one-key selector reads it, and selects nothing.
 */
function joinedParam(params: unknown, key: string | number | undefined): unknown {
  if (typeof key !== 'string') return params;
  const value = ownValue(params, key);
  if (!Array.isArray(value)) return params;
  const joined: Record<string, unknown> = {};
  setOwn(joined, key, value.join('/'));
  return joined;
}

/** A one-key selector's value, a segmented param's array joined into one path. */
function keyValue(from: unknown, key: string, segments: boolean): unknown {
  const value = ownValue(from, key);
  return segments && Array.isArray(value) ? value.join('/') : value;
}

/**
 * The value a spec selects. A read that throws (a getter or a proxy in a
 * parser's output, or the request's own getter for it: a lazy parser
 * decoding `%ZZ`, as Express 5's `req.query`) is one value that fails to
 * canonicalize, as in `selectValues`: a deny, not an error for the
 * framework to answer with a 500. A multi-step selector reads a parser's
 * container on its way (`['meta', 'path']` in a body whose `meta` is a
 * `Map`) as its record view, as the adapters read the part itself.
 */
function readValue(
  request: RequestValues,
  source: PathSource,
  selector: CompiledSelector,
  segments: boolean,
  authority: boolean,
): unknown {
  try {
    const from = partOf(request, source);
    let value =
      selector.key === undefined
        ? select(segments ? joinedParam(from, selector.steps[0]) : from, selector, recordView)
        : keyValue(from, selector.key, segments);
    if (authority && value === MISSING) value = ownValue(from, ':authority');
    // A list is copied here, inside the try: a proxy's `length` or a revoked one's
    // Array.isArray throws too, and the guard reads lists after this.
    return typeof value === 'string' || !Array.isArray(value) ? value : selectedValues(value);
  } catch {
    return undefined;
  }
}

export type GuardResult = { ok: true } | { ok: false; denial: PathDenial };
/**
 * A file part's decision: allowed with its checked path; `file: undefined`
 * for a part an optional spec lets go because it has no name (a browser's
 * empty file input): nothing is stored for it; or denied.
 */
export type FileResult =
  | { ok: true; file: CheckedFile }
  | { ok: true; file: undefined }
  | { ok: false; denial: PathDenial };

type Denied = Extract<GuardResult, { ok: false }>;

/** An optional file's part without a name: let go, with nothing to store. */
const NAMELESS: FileResult = Object.freeze({ ok: true, file: undefined });

/**
 * `request[source]` as named loads (`default` is `headers`: a fourth case
 * costs more). A keyed load serving every source goes megamorphic in a
 * server with several routes, and each megamorphic access probes V8's
 * global stub cache: about 100 instructions (bench/README.md, instructions.mjs).
 */
function partOf(request: RequestValues, source: PathSource): unknown {
  switch (source) {
    case 'params':
      return request.params;
    case 'query':
      return request.query;
    case 'body':
      return request.body;
    default:
      return request.headers;
  }
}

/**
 * `info[source]`, by named loads as `partOf`. A function of its own, not
 * `partOf` made generic: requests and infos have different hidden classes,
 * and loads that see both cost more (callgrind: about 50 instructions a value).
 */
function recordOf(info: PathgateInfo, source: PathSource): CheckedPaths {
  switch (source) {
    case 'params':
      return info.params;
    case 'query':
      return info.query;
    case 'body':
      return info.body;
    default:
      return info.headers;
  }
}

const isEmptyArray = (value: unknown): boolean => Array.isArray(value) && value.length === 0;

const ALLOWED: GuardResult = { ok: true };

const deny = (reason: GuardDenyReason, label: string, result?: CheckResult): Denied => ({
  ok: false as const,
  denial: result ? { reason, label, result } : { reason, label },
});

const UNEXPECTED: Denied = { ok: false, denial: UNEXPECTED_FILE };

/**
 * One route's compiled declaration: which request values are paths, in which
 * mode. Framework-free, so both adapters decide alike. Build it once per
 * route with `compileRouteGuard`; every method fails closed.
 */
export class RouteGuard {
  readonly mode: FsAccessMode;
  /** Specs for params, query, body and headers, checked by `checkRequest`. */
  private readonly values: readonly CompiledSpec[];
  /** Specs for multipart filenames, checked part by part by `checkFile`. */
  private readonly files: readonly CompiledSpec[];
  /**
   * The sources `checkRequest` reads: their records in `request.pathgate`
   * are filled per request, and an adapter hands over only these (a parsed
   * query or body through `recordView`).
   */
  readonly declares: Readonly<Record<PathSource, boolean>>;
  /** Looked up once: every value goes straight to `decide`. */
  private readonly compiled: CompiledPolicy;
  private readonly write: boolean;
  private readonly paramSegments: boolean;
  private readonly authorityHost: boolean;
  /**
   * The labels of the first body spec and the first file spec, if any: what
   * an adapter names in a `missing-path` deny when it cannot read the body.
   */
  readonly bodyLabel: string | undefined;
  readonly fileLabel: string | undefined;

  constructor(
    policy: PermissionPolicy,
    mode: FsAccessMode,
    specs: readonly CompiledSpec[],
    settings: GuardSettings = {},
  ) {
    this.mode = mode;
    this.paramSegments = settings.paramSegments === true;
    this.authorityHost = settings.authorityHost === true;
    this.compiled = compiledOf(policy, 'RouteGuard');
    this.write = mode === 'write';
    this.values = specs.filter((s) => s.source !== 'file');
    this.files = specs.filter((s) => s.source === 'file');
    this.bodyLabel = this.values.find((s) => s.source === 'body')?.label;
    this.fileLabel = this.files[0]?.label;
    const declares = (source: PathSource) => this.values.some((s) => s.source === source);
    this.declares = Object.freeze({
      params: declares('params'),
      query: declares('query'),
      body: declares('body'),
      headers: declares('headers'),
    });
  }

  /** Whether the route declared multipart filenames. */
  get expectsFiles(): boolean {
    return this.files.length > 0;
  }

  /** A fresh `request.pathgate` for one request. */
  newInfo(): RecordingInfo {
    const { declares } = this;
    return {
      mode: this.mode,
      params: declares.params ? newRecord() : NOTHING_CHECKED,
      query: declares.query ? newRecord() : NOTHING_CHECKED,
      body: declares.body ? newRecord() : NOTHING_CHECKED,
      headers: declares.headers ? newRecord() : NOTHING_CHECKED,
      files: [],
    };
  }

  /**
   * One selected value, or each element of a selected array: the canonical
   * path(s), or the first deny. A list stops at its first deny in report-only
   * mode too: it is left out whole, and reporting each element would let a
   * client make one request write as many log lines as its body holds
   * elements.
   */
  private checkSelected(spec: CompiledSpec, value: unknown): string | string[] | Denied {
    if (!Array.isArray(value)) return this.allowedPath(spec, value);
    const paths: string[] = [];
    // readValue's copy: a plain array, holes read as undefined.
    for (const item of value) {
      const path = this.allowedPath(spec, item);
      if (typeof path !== 'string') return path;
      paths.push(path);
    }
    return paths;
  }

  /** One value: an empty string is missing, a long one refused, `under` joins, the policy decides. */
  private allowedPath(spec: CompiledSpec, value: unknown): string | Denied {
    if (value === '') return deny('missing-path', spec.label);
    if (typeof value === 'string' && value.length > MAX_PATH_LENGTH) {
      return deny('path-too-long', spec.label);
    }
    const input =
      spec.under !== undefined && typeof value === 'string' ? `${spec.under}/${value}` : value;
    // Fenced: a client's value outside the root tells it nothing of what is there.
    const result = decide(this.compiled, input, this.write, true);
    return result.outcome === 'allow' ? result.path : deny(result.reason, spec.label, result);
  }

  /**
   * Checks every declared value of params, query, body and headers; records
   * allowed paths in `info`. With `sources`, only the specs of those sources
   * are checked: on a multipart request, an adapter checks params, query and
   * headers before the upload is read, and the body once its fields are
   * (README, "For adapter authors", for the order). With `denials`
   * (report-only mode), a deny stops nothing: it is added there, every other
   * spec is still checked and recorded, and the result is ok.
   *
   * The common case, a one-key selector holding a string, is handled here
   * without the selector walk or the array path: in a server where each
   * request finds the caches cold, every function and object on this path
   * costs time (bench/README.md, "cold caches").
   */
  checkRequest(
    request: RequestValues,
    info: PathgateInfo,
    sources?: readonly PathSource[],
    denials?: PathDenial[],
  ): GuardResult {
    for (const spec of this.values) {
      const source = spec.source as PathSource;
      if (sources !== undefined && !sources.includes(source)) continue;
      const selector = spec.selector as CompiledSelector;
      const segments = this.paramSegments && source === 'params';
      // Header names are lowercased when compiled: `host` is the only spelling.
      const authority = this.authorityHost && source === 'headers' && selector.key === 'host';
      const value = readValue(request, source, selector, segments, authority);
      // The string test first: `===` on a value of unknown type is a builtin call.
      const text = typeof value === 'string';
      if (text ? value.length === 0 : value === MISSING || isEmptyArray(value)) {
        if (spec.optional) {
          // A name Object.prototype has (`constructor`) would read as its function, not as absent.
          if (selector.label in Object.prototype)
            setUndefined(recordOf(info, source), selector.label);
          continue;
        }
        const missing = deny('missing-path', spec.label);
        if (denials === undefined) return missing;
        denials.push(missing.denial);
        continue;
      }
      const checked = text ? this.allowedPath(spec, value) : this.checkSelected(spec, value);
      if (typeof checked !== 'string' && !Array.isArray(checked)) {
        if (denials === undefined) return checked;
        denials.push(checked.denial);
        continue;
      }
      // Read-only to the handler; the guard fills it.
      setOwn(recordOf(info, source) as Record<string, string | string[]>, selector.label, checked);
    }
    return ALLOWED;
  }

  private fileSpec(field: string): CompiledSpec | undefined {
    return this.files.find((s) => s.field === field) ?? this.files.find((s) => s.field === true);
  }

  /** Checks one multipart file part's filename, before any of its bytes are stored. */
  checkFile(field: string, filename: unknown): FileResult {
    const spec = this.fileSpec(field);
    if (!spec) return UNEXPECTED;
    if (filename === undefined || filename === '') {
      return spec.optional ? NAMELESS : deny('missing-path', spec.label);
    }
    const path = this.allowedPath(spec, filename);
    if (typeof path !== 'string') return path;
    // A file needs a name of its own: `x/`, `x/.`, `x/..` or `../uploads` name a directory.
    const name = (filename as string).slice((filename as string).lastIndexOf('/') + 1);
    const directory = name === '' || name === '.' || name === '..';
    if (directory || path === (spec.under ?? this.compiled.root.path)) {
      return deny('missing-path', spec.label);
    }
    return { ok: true, file: { field, filename: filename as string, path } };
  }

  /**
   * After the last part: a required file spec that no part satisfied. An
   * adapter passes the allowed files, and in report-only mode the fields of
   * parts it let through unchecked (reported once, not missing as well).
   */
  checkMissingFiles(received: readonly Pick<CheckedFile, 'field'>[]): GuardResult {
    for (const spec of this.files) {
      if (spec.optional) continue;
      const seen = received.some((f) => spec.field === true || f.field === spec.field);
      if (!seen) return deny('missing-path', spec.label);
    }
    return ALLOWED;
  }
}

/**
 * Compiles a route's declaration against a policy. Every problem is a
 * TypeError that names the route and the spec: `GET /files/*: paths[1]: …`.
 */
export function compileRouteGuard(
  policy: PermissionPolicy,
  options: RouteGuardOptions,
  route: string,
  settings?: GuardSettings,
): RouteGuard {
  // The policy's own canonical root (path and segments): `under` is joined to it.
  const { root } = compiledOf(policy, 'compileRouteGuard');
  const fail = (message: string): never => {
    throw new TypeError(`pathgate: route ${route}: ${message}`);
  };
  if (typeof options !== 'object' || options === null) fail('the declaration must be an object');
  for (const key of Object.keys(options)) {
    if (key === 'mode' || key === 'paths') continue;
    // A route-level reportOnly or onDeny is a likely guess: say where it goes.
    const where = ADAPTER_OPTIONS.has(key)
      ? `; ${key} is an option of the adapter, for all its routes`
      : '';
    fail(`unknown key "${key}" (use mode and paths${where})`);
  }
  // Own keys, as in each spec: a polluted Object.prototype must not complete a declaration.
  const mode = readOwn(options, 'mode');
  const paths = readOwn(options, 'paths');
  if (mode !== 'read' && mode !== 'write') fail('mode must be "read" or "write"');
  if (!Array.isArray(paths) || paths.length === 0) fail('paths must be a non-empty array');
  // `under` is literal text like the root: relative to the root, or absolute; inside it either way.
  const canonicalUnder = (under: string): string | undefined => {
    const result = canonicalizeValue(under, root, undefined);
    return result.ok && isWithin(result.value.path, root.path) ? result.value.path : undefined;
  };
  const specs = (paths as unknown[]).map((spec, i) =>
    compileSpec(spec, (message) => fail(`paths[${i}]: ${message}`), canonicalUnder),
  );
  checkRecordKeys(specs, fail);
  return new RouteGuard(policy, mode as FsAccessMode, specs, settings);
}
