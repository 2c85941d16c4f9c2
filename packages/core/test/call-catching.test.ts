import { describe, expect, it } from 'vitest';
import { callCatching } from '../src/index.js';

// An app's function called where nothing catches: every failure reaches
// onFailed as an Error, and a success returns what the call returned.
describe('callCatching', () => {
  const failures = (call: () => unknown) => {
    const seen: Error[] = [];
    const returned = callCatching(call, (error) => seen.push(error));
    return { returned, seen };
  };

  it('returns what the call returned, and fails nothing', () => {
    expect(failures(() => 42)).toEqual({ returned: 42, seen: [] });
  });

  it('a throw goes to onFailed; undefined is returned', () => {
    const error = new Error('thrown');
    expect(
      failures(() => {
        throw error;
      }),
    ).toEqual({ returned: undefined, seen: [error] });
  });

  it('a falsy throw becomes an Error, so it never reads as success', () => {
    const { seen } = failures(() => {
      throw undefined;
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeInstanceOf(Error);
  });

  it("a returned promise's rejection goes to onFailed; the promise is returned", async () => {
    const error = new Error('rejected');
    const promise = Promise.reject(error);
    const { returned, seen } = failures(() => promise);
    expect(returned).toBe(promise);
    await new Promise((go) => setImmediate(go));
    expect(seen).toEqual([error]);
  });
});
