// Shared by the adapters' parser-shape tests: a parser's output whose reads throw.

/**
 * Parses `a=1&b=2` as a lazy parser would: each value is decoded when it is
 * read, so a bad escape (`%ZZ`) throws there, not in the parser. A repeated
 * key is a list whose elements decode when read.
 */
export function lazyValues(text: string): Record<string, unknown> {
  const raw = new Map<string, string[]>();
  for (const pair of text.split('&')) {
    const [key = '', value = ''] = pair.split('=');
    raw.set(key, [...(raw.get(key) ?? []), value]);
  }
  const values = {};
  for (const [key, list] of raw) {
    const lazy = list.map((value) => ({ enumerable: true, get: () => decodeURIComponent(value) }));
    const entry = lazy.length === 1 ? lazy[0] : { enumerable: true, value: lazyList(lazy) };
    Object.defineProperty(values, key, entry as PropertyDescriptor);
  }
  return values;
}

function lazyList(elements: readonly PropertyDescriptor[]): unknown[] {
  return Object.defineProperties(
    new Array(elements.length),
    Object.fromEntries(elements.entries()),
  );
}
