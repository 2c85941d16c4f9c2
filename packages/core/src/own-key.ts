/**
 * Sets an own, enumerable property, even when the key is `__proto__` (a
 * plain assignment would call the prototype setter instead). For records
 * keyed by request-chosen names, which both the core guard and the adapters build.
 */
export function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else target[key] = value;
}

/**
 * An option read as an own key: an inherited one (say, from a polluted
 * `Object.prototype`) counts as absent, as does an own key holding `undefined`.
 */
export function readOwn(source: object, key: string): unknown {
  return Object.hasOwn(source, key) ? (source as Record<string, unknown>)[key] : undefined;
}

/**
 * Whether `key` reaches `source` from a prototype other than Object.prototype:
 * a class's getter or method, or an object made with `Object.create`. Read
 * as absent, such an option would be dropped without a word (a `root`
 * getter left the root at `/`), so its reader refuses it; one from a
 * polluted Object.prototype stays ignored.
 */
export function inheritedOption(source: object, key: string): boolean {
  if (Object.hasOwn(source, key)) return false;
  for (
    let proto = Object.getPrototypeOf(source);
    proto !== null;
    proto = Object.getPrototypeOf(proto)
  ) {
    if (proto === Object.prototype) return false;
    if (Object.hasOwn(proto, key)) return true;
  }
  return false;
}
