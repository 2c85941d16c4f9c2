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
