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
