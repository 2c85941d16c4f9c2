import { PermissionPolicy } from '@pathgate/core';
import { describe, expect, it } from 'vitest';
import { type PathgateOptions, pathgate } from '../src/index.js';

// Options are validated once, when the gate is built: every problem is a
// TypeError whose message names the option (or the rule, or the route spec).

const FS = ['rw:uploads/**'];

/** The TypeError message `fn` throws. */
const thrown = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return (error as Error).message;
  }
  throw new Error('expected a TypeError');
};

const build = (options: unknown) => () => pathgate(options as PathgateOptions);

describe('pathgate(options): bad options throw at once, naming the option', () => {
  const policy = new PermissionPolicy({ root: '/srv', permissions: { fs: FS } });
  const ROWS: readonly (readonly [string, unknown, string])[] = [
    ['no options', undefined, 'pathgate: options must be an object'],
    ['null', null, 'pathgate: options must be an object'],
    ['an array', [], 'pathgate: options must be an object'],
    ['an unknown option', { fs: FS, roots: '/srv' }, 'pathgate: unknown option "roots"'],
    [
      'fs missing',
      { root: '/srv' },
      'pathgate: option fs must be an array of rule strings (or give policy)',
    ],
    [
      'fs a string',
      { fs: 'rw:uploads/**' },
      'pathgate: option fs must be an array of rule strings (or give policy)',
    ],
    ['fs null', { fs: null }, 'pathgate: option fs must not be null'],
    ['root null', { root: null, fs: FS }, 'pathgate: option root must not be null'],
    [
      'policy not a policy',
      { policy: { root: '/' } },
      'pathgate: option policy must be a PermissionPolicy',
    ],
    [
      'policy with root',
      { policy, root: '/srv' },
      'pathgate: option root cannot be combined with policy',
    ],
    ['policy with fs', { policy, fs: FS }, 'pathgate: option fs cannot be combined with policy'],
    ['onDeny a string', { fs: FS, onDeny: 'log' }, 'pathgate: option onDeny must be a function'],
    ['log an object', { fs: FS, log: console }, 'pathgate: option log must be a function'],
    [
      'reportOnly a string',
      { fs: FS, reportOnly: 'yes' },
      'pathgate: option reportOnly must be a boolean',
    ],
    [
      'errors "throw"',
      { fs: FS, errors: 'throw' },
      'pathgate: option errors must be "respond" or "next"',
    ],
    [
      'lingerMs negative',
      { fs: FS, lingerMs: -1 },
      'pathgate: option lingerMs must be a non-negative integer',
    ],
    [
      'lingerMs fractional',
      { fs: FS, lingerMs: 1.5 },
      'pathgate: option lingerMs must be a non-negative integer',
    ],
    [
      'lingerBytes a string',
      { fs: FS, lingerBytes: '1mb' },
      'pathgate: option lingerBytes must be a non-negative integer',
    ],
  ];
  it.each(ROWS)('%s', (_name, options, message) => {
    expect(thrown(build(options))).toBe(message);
  });

  it('restates the core policy errors with the names of its own options', () => {
    expect(thrown(build({ fs: ['wr:./x'] }))).toBe(
      'pathgate: rule 1 "wr:./x": unknown prefix "wr" (use "r:" or "rw:")',
    );
    expect(thrown(build({ root: 'srv', fs: FS }))).toBe(
      'pathgate: option root must canonicalize to an absolute path (relative-root)',
    );
    expect(thrown(build({ fs: FS, dot: 'yes' }))).toBe('pathgate: option dot must be a boolean');
    expect(thrown(build({ fs: FS, resolve: 'realpath' }))).toBe(
      'pathgate: option resolve must be a function',
    );
    expect(thrown(build({ root: '/srv', fs: ['/etc/**'] }))).toBe(
      'pathgate: rule 1 "/etc/**": lies outside the root',
    );
    expect(thrown(build({ fs: ['a/*', 7] }))).toBe(
      'pathgate: rule 2: must be a string, got number',
    );
  });

  it('restates only TypeErrors: an error from the caller’s own rules array passes through as it is', () => {
    const error = new RangeError('rules store down');
    const fs = Object.defineProperty([], 0, {
      enumerable: true,
      get() {
        throw error;
      },
    });
    expect(() => pathgate({ fs })).toThrow(expect.toSatisfy((thrown) => thrown === error));
  });

  it('takes a ready policy, and options holding undefined count as absent', () => {
    expect(pathgate({ policy }).policy).toBe(policy);
    const gate = pathgate({
      root: '/srv',
      fs: FS,
      dot: undefined,
      onDeny: undefined,
      errors: undefined,
      // An unknown key holding undefined is absent too (as in the core's PermissionPolicy).
      roots: undefined,
    } as PathgateOptions);
    expect(gate.policy.root).toBe('/srv');
    expect(gate.policy.rules).toEqual(FS);
  });

  it('accepts fs: [] (a gate that denies everything)', () => {
    expect(pathgate({ fs: [] }).policy.rules).toEqual([]);
  });
});

describe('gate.read() / gate.write(): route specs are compiled when the middleware is made', () => {
  // A gate per test: a gate numbers its calls, so a shared one would count another test's.
  const freshGate = () => pathgate({ root: '/srv', fs: FS });
  const ONE = 'name exactly one of params, query, body, headers, file';

  it('names the gate call, its number and paths[i]', () => {
    const gate = freshGate();
    const first = thrown(() => gate.read({ params: 'path' }, { body: 'a', query: 'b' } as never));
    expect(first).toBe(`pathgate: route gate.read() #1: paths[1]: ${ONE}`);
    expect(thrown(() => gate.write())).toBe(
      'pathgate: gate.write() #2 needs at least one path spec',
    );
    expect(thrown(() => gate.write({ body: '' }))).toMatch(
      /^pathgate: route gate\.write\(\) #3: paths\[0\]: body must be a non-empty key/,
    );
    expect(thrown(() => gate.read({ file: 'a', under: '../x' }))).toBe(
      'pathgate: route gate.read() #4: paths[0]: under must be a directory inside the root',
    );
    expect(thrown(() => gate.read({ query: 'a', optional: 'yes' } as never))).toBe(
      'pathgate: route gate.read() #5: paths[0]: optional must be a boolean',
    );
    expect(thrown(() => gate.read({ query: 'a', where: 'x' } as never))).toBe(
      'pathgate: route gate.read() #6: paths[0]: unknown key "where"',
    );
  });

  it('returns Express middleware (req, res, next)', () => {
    const middleware = freshGate().write({ body: 'from' }, { body: 'to', under: 'uploads' });
    expect(typeof middleware).toBe('function');
    expect(middleware.length).toBe(3);
  });
});

const STORAGE_ENGINE =
  'option storage must be a multer storage engine (with _handleFile and _removeFile)';

describe('gate.multer(options): multer options pathgate owns are refused', () => {
  const gate = pathgate({ root: '/srv', fs: FS });
  const ROWS: readonly (readonly [string, unknown, string])[] = [
    ['null', null, 'options must be an object'],
    ['preservePath', { preservePath: false }, 'option preservePath is set by pathgate'],
    ['defParamCharset', { defParamCharset: 'latin1' }, 'option defParamCharset is set by pathgate'],
    ['dest', { dest: '/tmp' }, 'option dest is set by pathgate'],
    ['fileFilter a string', { fileFilter: 'x' }, 'option fileFilter must be a function'],
    ['streamHandler a number', { streamHandler: 1 }, 'option streamHandler must be a function'],
    // multer falls back to memory for these; pathgate would store on disk: neither was asked for.
    ['storage null', { storage: null }, STORAGE_ENGINE],
    ['storage a path', { storage: '/tmp/uploads' }, STORAGE_ENGINE],
    ['storage without _removeFile', { storage: { _handleFile() {} } }, STORAGE_ENGINE],
    ['storage without _handleFile', { storage: { _removeFile() {} } }, STORAGE_ENGINE],
  ];
  it.each(ROWS)('%s', (_name, options, message) => {
    expect(thrown(() => gate.multer(options as never))).toBe(`pathgate: gate.multer(): ${message}`);
  });

  it('gate.diskStorage(options) is validated too', () => {
    expect(thrown(() => gate.diskStorage({ overwrite: 'yes' } as never))).toBe(
      'pathgate: gate.diskStorage(): option overwrite must be a boolean',
    );
    expect(thrown(() => gate.diskStorage({ mode: 0o600 } as never))).toBe(
      'pathgate: gate.diskStorage(): unknown option "mode"',
    );
    expect(typeof gate.diskStorage({ overwrite: true })._handleFile).toBe('function');
  });

  it('passes limits through to multer, which validates them', () => {
    expect(() => gate.multer({ limits: { fileSize: -1 } })).toThrow();
    expect(typeof gate.multer({ limits: { fileSize: 1024 } }).single).toBe('function');
  });
});
