import {
  type CanonicalizeOptions,
  type CanonicalPath,
  canonicalizeRoot,
  canonicalizeValue,
  isWithin,
  resolverOf,
  rootFailure,
} from './canonicalize.js';
import { MISSING, requireSelector, type Selector, selectValues } from './selector.js';

type Resolve = CanonicalizeOptions['resolve'];

/** True when `value` canonicalizes to `root` itself or a path below it; any failure is false. */
export function isInside(value: unknown, root: unknown, options?: CanonicalizeOptions): boolean {
  const resolve = resolverOf(options);
  const base = canonicalizeRoot(root, resolve);
  if (!base.ok) return false;
  const result = canonicalizeValue(value, base.value, resolve);
  return result.ok && isWithin(result.value.path, base.value.path);
}

/** Build-time half of `inside` and `escapes`: a canonical root and a `within` test. */
function prepare(name: string, selector: Selector, root: string, options?: CanonicalizeOptions) {
  const resolve: Resolve = resolverOf(options);
  if (resolve !== undefined && typeof resolve !== 'function') {
    throw new TypeError(`${name}: options.resolve must be a function`);
  }
  const base = canonicalizeRoot(root, resolve);
  if (!base.ok) {
    throw new TypeError(`${name}: ${rootFailure(base.reason)}`);
  }
  const compiled = requireSelector(selector, `${name}: selector`);
  const { path }: CanonicalPath = base.value;
  const within = (value: unknown): boolean => {
    const result = canonicalizeValue(value, base.value, resolve);
    return result.ok && isWithin(result.value.path, path);
  };
  return { compiled, within };
}

/**
 * For allow rules: true only when the selected value is a path, or a
 * non-empty array of paths, that all lie inside the root. Missing → false.
 */
export function inside(
  selector: Selector,
  root: string,
  options?: CanonicalizeOptions,
): (args: unknown) => boolean {
  const { compiled, within } = prepare('inside', selector, root, options);
  return (args) => {
    const values = selectValues(args, compiled);
    return values !== MISSING && values.length > 0 && values.every(within);
  };
}

/**
 * For deny rules: true when any selected value fails to canonicalize or lies
 * outside the root. Missing, or an empty array → false.
 */
export function escapes(
  selector: Selector,
  root: string,
  options?: CanonicalizeOptions,
): (args: unknown) => boolean {
  const { compiled, within } = prepare('escapes', selector, root, options);
  return (args) => {
    const values = selectValues(args, compiled);
    return values !== MISSING && values.some((value) => !within(value));
  };
}
