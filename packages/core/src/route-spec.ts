import type { FsAccessMode } from './check-fs.js';
import { readOwn } from './own-key.js';
import { type CompiledSelector, compileSelector, type Selector } from './selector.js';

/** Where a request carries path values. */
export type PathSource = 'params' | 'query' | 'body' | 'headers';

interface SpecCommon {
  /**
   * A sub-directory of the root that the value is joined under, as a
   * relative path even when it starts with `/` (`'uploads'`, or `'.'` for
   * the root itself). Default: none (the value is taken as the core does).
   */
  under?: string | undefined;
  /** A missing value is skipped instead of denied. Default `false`. */
  optional?: boolean | undefined;
}

type SourceKey = PathSource | 'file';
/**
 * `{ [K]: T }` with every other source key absent, so a spec names exactly
 * one (a key holding `undefined` counts as absent, as at run time).
 */
type OnlySource<K extends SourceKey, T> = { [S in K]: T } & {
  [S in Exclude<SourceKey, K>]?: undefined;
};

/** One path value of a route: exactly one source key, plus `under` and `optional`. */
export type PathSpec =
  | (SpecCommon & OnlySource<'params', Selector>)
  | (SpecCommon & OnlySource<'query', Selector>)
  | (SpecCommon & OnlySource<'body', Selector>)
  | (SpecCommon & OnlySource<'headers', string>)
  /** Multipart file parts' filenames: by field name, or `true` for every file. */
  | (SpecCommon & OnlySource<'file', string | true>);

/**
 * The route parameters a declaration's required `params` specs name (a
 * selector's first key): a route without one of them denies every request.
 * An optional spec may name a parameter only some routes have (a
 * declaration shared by `/list` and `/list/:dir`).
 */
export function requiredParams(paths: readonly PathSpec[]): string[] {
  return paths.flatMap((spec) => {
    const params = readOwn(spec, 'params') as Selector | undefined;
    if (params === undefined || readOwn(spec, 'optional') === true) return [];
    return [String(typeof params === 'string' ? params : params[0])];
  });
}

/** What a route declares: the mode its paths are used in, and where they come from. */
export interface RouteGuardOptions {
  mode: FsAccessMode;
  paths: readonly PathSpec[];
}

export interface CompiledSpec {
  readonly source: PathSource | 'file';
  /** For values: the selector; undefined for files. */
  readonly selector: CompiledSelector | undefined;
  /** For files: the field name, or `true` (every file); undefined for values. */
  readonly field: string | true | undefined;
  /** Canonical path of `under`, or undefined. */
  readonly under: string | undefined;
  readonly optional: boolean;
  /** `body.from`, `params.*`, `file avatar`: for messages and `request.pathgate`. */
  readonly label: string;
}

const SOURCES = ['params', 'query', 'body', 'headers', 'file'] as const;
const KNOWN = new Set<string>([...SOURCES, 'under', 'optional']);

/** Throws the build-time TypeError naming the route and the selector. */
export type SpecError = (message: string) => never;

function sourceOf(spec: object, fail: SpecError): (typeof SOURCES)[number] {
  for (const key of Object.keys(spec)) if (!KNOWN.has(key)) fail(`unknown key "${key}"`);
  const present = SOURCES.filter((s) => readOwn(spec, s) !== undefined);
  if (present.length !== 1) fail(`name exactly one of ${SOURCES.join(', ')}`);
  return present[0] as (typeof SOURCES)[number];
}

function compileField(raw: unknown, fail: SpecError): string | true {
  if (raw === true || (typeof raw === 'string' && raw !== '')) return raw;
  return fail('file must be a field name or true (every file)');
}

function compileValueSelector(source: PathSource, raw: unknown, fail: SpecError): CompiledSelector {
  const text = source === 'headers' && typeof raw === 'string' ? raw.toLowerCase() : raw;
  if (source === 'headers' && typeof raw !== 'string') fail('headers must be a header name');
  const compiled = compileSelector(text);
  if (compiled) return compiled;
  return fail(
    `${source} must be a non-empty key or a non-empty list of non-empty keys and non-negative integer indexes`,
  );
}

/**
 * Validates one spec at build time. `canonicalUnder` turns an `under`
 * sub-directory into its canonical path, or undefined when it is unusable.
 */
export function compileSpec(
  spec: unknown,
  fail: SpecError,
  canonicalUnder: (under: string) => string | undefined,
): CompiledSpec {
  if (typeof spec !== 'object' || spec === null) return fail('must be an object');
  const source = sourceOf(spec, fail);
  // Own keys only: a polluted Object.prototype must not make a spec optional or move it.
  const rawUnder = readOwn(spec, 'under');
  const rawOptional = readOwn(spec, 'optional');
  if (rawOptional !== undefined && typeof rawOptional !== 'boolean') {
    fail('optional must be a boolean');
  }
  const optional = rawOptional === true;
  if (rawUnder !== undefined && (typeof rawUnder !== 'string' || rawUnder === '')) {
    fail('under must be a non-empty string (use "." for the root)');
  }
  const under = rawUnder === undefined ? undefined : canonicalUnder(rawUnder);
  if (rawUnder !== undefined && under === undefined)
    fail('under must be a directory inside the root');
  const raw = readOwn(spec, source);
  if (source === 'file') {
    const field = compileField(raw, fail);
    const label = field === true ? 'file *' : `file ${field}`;
    return { source, selector: undefined, field, under, optional, label };
  }
  const selector = compileValueSelector(source, raw, fail);
  const label = `${source}.${selector.label}`;
  return { source, selector, field: undefined, under, optional, label };
}
