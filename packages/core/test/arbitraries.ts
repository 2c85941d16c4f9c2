import fc from 'fast-check';

/**
 * Any JavaScript value a request parser or a caller could hand over: boxed
 * values, maps, sets, null prototypes, bigints, dates, typed and sparse
 * arrays, any Unicode. `keys` narrows object keys to names that matter
 * (`__proto__`, `constructor`, …); by default they are arbitrary.
 */
export const anyValue = (keys?: fc.Arbitrary<string>): fc.Arbitrary<unknown> =>
  fc.anything({
    ...(keys && { key: keys }),
    withBoxedValues: true,
    withMap: true,
    withSet: true,
    withObjectString: true,
    withNullPrototype: true,
    withBigInt: true,
    withDate: true,
    withTypedArray: true,
    withSparseArray: true,
    withUnicodeString: true,
  });
