/** One key (`'path'`) or a list of keys and indexes (`['files', 0, 'path']`). */
export type Selector = string | readonly (string | number)[];

/** A validated selector: its steps, and its text for messages and names. */
export interface CompiledSelector {
  readonly steps: readonly (string | number)[];
  readonly label: string;
  /** The key of a one-key selector (`{ body: 'path' }`, what nearly every route declares). */
  readonly key: string | undefined;
}

/** What a selector finds when the value is missing (a value itself may be `undefined`: a hole). */
export const MISSING: unique symbol = Symbol('pathgate.missing');

function isStep(step: unknown): step is string | number {
  if (typeof step === 'string') return step.length > 0;
  return typeof step === 'number' && Number.isInteger(step) && step >= 0;
}

/** Validates a selector once, at build time; returns undefined when malformed. */
export function compileSelector(selector: unknown): CompiledSelector | undefined {
  const given = typeof selector === 'string' ? [selector] : selector;
  if (!Array.isArray(given) || given.length === 0) return undefined;
  // Array.from reads holes as undefined, which isStep refuses (`every` would skip them).
  const steps = Array.from(given as unknown[]);
  if (!steps.every(isStep)) return undefined;
  const key = steps.length === 1 && typeof steps[0] === 'string' ? steps[0] : undefined;
  return { steps: Object.freeze(steps), label: steps.join('.'), key };
}

/** Selector validation that throws the builders' TypeError. */
export function requireSelector(selector: unknown, what: string): CompiledSelector {
  const compiled = compileSelector(selector);
  if (compiled) return compiled;
  throw new TypeError(
    `${what}: a selector is a non-empty key or a non-empty list of non-empty keys and non-negative integer indexes`,
  );
}

/** The own property `key` of an object (not an array), MISSING when absent or `undefined`. */
export function ownValue(current: unknown, key: string): unknown {
  if (typeof current !== 'object' || current === null || Array.isArray(current)) return MISSING;
  if (!Object.hasOwn(current, key)) return MISSING;
  const value = (current as Record<string, unknown>)[key];
  return value === undefined ? MISSING : value;
}

/**
 * Reads own properties for keys and array elements for indexes, never the
 * prototype chain. A key holding `undefined` is missing; an in-bounds index
 * selects its element even when it is `undefined` or a hole (DESIGN.md: a
 * failing value, not a missing one), and nothing is read below such an element.
 * `view`, when given, turns what a key step meets into the object it reads.
 */
export function select(
  args: unknown,
  selector: CompiledSelector,
  view?: (value: unknown) => unknown,
): unknown {
  let current = args;
  for (const step of selector.steps) {
    if (typeof step === 'number') {
      if (!Array.isArray(current) || step >= current.length) return MISSING;
      current = current[step];
      if (current === undefined) return undefined;
    } else {
      current = ownValue(view === undefined ? current : view(current), step);
      if (current === MISSING) return MISSING;
    }
  }
  return current;
}

/**
 * A list's elements up to and including the first that is not a string:
 * that one fails to canonicalize, so the list fails there whatever follows.
 * Never past it: a parser can hand over a sparse list of 2³² - 1 elements
 * from a few bytes (multer's `to[4294967294]`), and copying it whole blocked
 * the process for seconds.
 */
function upToFirstNonString(list: readonly unknown[]): unknown[] {
  const copy: unknown[] = [];
  for (let i = 0; i < list.length; i++) {
    const item = list[i];
    copy.push(item);
    if (typeof item !== 'string') break;
  }
  return copy;
}

/**
 * The values to check: a selected array is checked element by element
 * (holes included), up to its first failing one. A list with an element
 * whose read throws (an accessor) is one value that fails to canonicalize.
 */
export function selectedValues(value: unknown): readonly unknown[] {
  if (!Array.isArray(value)) return [value];
  try {
    return upToFirstNonString(value);
  } catch {
    return [undefined];
  }
}

/**
 * What `inside` and `escapes` check: MISSING, or the selected values. A read
 * that throws (a getter, a revoked proxy) is not missing but one value that
 * fails to canonicalize, so the predicates fail closed instead of throwing.
 */
export function selectValues(
  args: unknown,
  selector: CompiledSelector,
): readonly unknown[] | typeof MISSING {
  try {
    const selection = select(args, selector);
    return selection === MISSING ? MISSING : selectedValues(selection);
  } catch {
    return [undefined];
  }
}
