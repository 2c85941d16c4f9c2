import { type PathDenial, type PathgateInfo, PermissionPolicy } from '@pathgate/core';
import express, { type Request, type RequestHandler, type Response } from 'express';
import type { Multer, StorageEngine } from 'multer';
import { describe, expectTypeOf, it } from 'vitest';
import pathgateDefault, {
  type CheckedFile,
  type DenyHandling,
  type ExpressPathgateInfo,
  type GuardDenyReason,
  type Pathgate,
  type PathgateDeniedError,
  type PathgateHandler,
  type PathgateLogEntry,
  type PathgateMulter,
  type PathgateOptions,
  type PathgateStorageError,
  pathgate,
} from '../src/index.js';

// The public API's types, end to end: options, gate methods, specs,
// req.pathgate and file.pathgatePath by declaration merging.

describe('types', () => {
  it('the factory: default and named export, typed options', () => {
    expectTypeOf(pathgateDefault).toEqualTypeOf(pathgate);
    expectTypeOf(pathgate).parameter(0).toEqualTypeOf<PathgateOptions>();
    expectTypeOf(pathgate).returns.toEqualTypeOf<Pathgate>();
    expectTypeOf<PathgateOptions['errors']>().toEqualTypeOf<DenyHandling | undefined>();
    expectTypeOf<DenyHandling>().toEqualTypeOf<'respond' | 'next'>();
    expectTypeOf<PathgateOptions['log']>().toEqualTypeOf<
      ((entry: PathgateLogEntry) => void) | undefined
    >();
    expectTypeOf<Parameters<NonNullable<PathgateOptions['onDeny']>>>().toEqualTypeOf<
      [PathDenial, Request, Response]
    >();
    // A logging-only hook (returning nothing) and a body-shaping one both fit.
    pathgate({ fs: [], onDeny: (denial) => console.debug(denial.reason) });
    pathgate({ fs: [], onDeny: (denial) => ({ error: denial.reason }) });
  });

  it('log entries: each event with the fields it always carries (report-only.test.ts sees them)', () => {
    const log = (entry: PathgateLogEntry): void => {
      // Any entry's label reads, absent on all but report-only.
      expectTypeOf(entry.label).toEqualTypeOf<string | undefined>();
      if (entry.event === 'report-only') {
        const label: string = entry.label;
        const reason: GuardDenyReason = entry.reason;
        expectTypeOf(entry.path).toEqualTypeOf<string | undefined>();
        console.debug(label, reason);
      } else if (entry.event === 'hook-failed') {
        expectTypeOf(entry.error).toEqualTypeOf<unknown>();
        expectTypeOf(entry.reason).toEqualTypeOf<undefined>();
      } else {
        expectTypeOf(entry.event).toEqualTypeOf<'misconfigured'>();
        expectTypeOf(entry.error).toEqualTypeOf<undefined>();
      }
    };
    pathgate({ fs: [], log });
  });

  it('options: a policy or its parts, never both', () => {
    const policy = new PermissionPolicy({ root: '/srv', permissions: { fs: [] } });
    pathgate({ policy, errors: 'next', log: () => {} });
    pathgate({ root: '/srv', fs: ['docs/**'], dot: true, resolve: (path) => path });
    // An own key holding undefined counts as absent.
    pathgate({ policy, root: undefined, fs: undefined, dot: undefined, resolve: undefined });
    pathgate({ policy: undefined, fs: [], root: undefined });
    // Compiled, never run: each call throws a TypeError.
    const typeErrors = () => {
      // @ts-expect-error fs is required without a policy
      pathgate({ root: '/srv' });
      // @ts-expect-error a policy and rules
      pathgate({ policy, fs: [] });
      // @ts-expect-error a policy and a root
      pathgate({ policy, root: '/srv' });
      // @ts-expect-error unknown option
      pathgate({ fs: [], bogus: true });
    };
    expectTypeOf(typeErrors).toBeFunction();
  });

  it('the gate: route middleware, multer and storage', () => {
    const gate = pathgate({ root: '/srv', fs: ['rw:uploads/**'] });
    expectTypeOf(gate.policy).toEqualTypeOf<PermissionPolicy>();
    expectTypeOf(gate.read({ params: 'path' })).toEqualTypeOf<PathgateHandler>();
    expectTypeOf(
      gate.write({ body: 'from' }, { body: ['to', 0], under: 'uploads', optional: true }),
    ).toEqualTypeOf<PathgateHandler>();
    expectTypeOf(
      gate.write({ file: 'avatar', under: 'uploads' }, { file: true }),
    ).toEqualTypeOf<PathgateHandler>();
    expectTypeOf(gate.read({ headers: 'x-file' }, { query: 'q' })).toEqualTypeOf<PathgateHandler>();
    // Still an Express handler, and still a multer instance, where one is expected.
    expectTypeOf(gate.read({ params: 'path' })).toMatchTypeOf<RequestHandler>();
    expectTypeOf(gate.multer({ limits: { fileSize: 1 } })).toEqualTypeOf<PathgateMulter>();
    expectTypeOf(gate.multer()).toMatchTypeOf<Multer>();
    expectTypeOf(gate.multer().single('f')).toEqualTypeOf<PathgateHandler>();
    expectTypeOf(gate.diskStorage({ overwrite: true })).toEqualTypeOf<StorageEngine>();
    // An optional field holding undefined counts as absent.
    gate.diskStorage({ overwrite: undefined });
    gate.multer({ streamHandler: undefined });
    gate.multer({ fileFilter: undefined, storage: undefined, limits: undefined });
    // multer 2.x options @types/multer lacks: taken at run time, so typed.
    gate.multer({
      defCharset: 'latin1',
      highWaterMark: 64 * 1024,
      fileHwm: 16 * 1024,
      limits: (req) => ({ fileSize: req.ip === '127.0.0.1' ? 1e9 : 1e6 }),
    });
    // Compiled, never run: each call is a type error.
    const typeErrors = () => {
      // @ts-expect-error a spec names exactly one source
      gate.read({ params: 'a', query: 'b' });
      // @ts-expect-error headers take one name, not a key/index list
      gate.read({ headers: ['x', 0] });
      // @ts-expect-error file is a field name or true
      gate.write({ file: false });
      // @ts-expect-error pathgate sets preservePath itself
      gate.multer({ preservePath: false });
      // @ts-expect-error an unknown key (it throws too): limits is meant
      gate.multer({ limit: { fileSize: 1 } });
      // @ts-expect-error errors is 'respond' or 'next'
      pathgate({ fs: [], errors: 'throw' });
    };
    expectTypeOf(typeErrors).toBeFunction();
  });

  it("a gate leaves the route's params to the route's path", () => {
    const gate = pathgate({ root: '/srv', fs: ['rw:**'] });
    const upload = gate.multer();
    const app = express();
    const router = express.Router();
    // Compiled, never run. A gate typed as a plain RequestHandler would set
    // params to ParamsDictionary: a string | string[] | undefined per key, any key.
    const routes = () => {
      app.get('/d/:dir/:name', gate.read({ params: 'dir' }), (req, res) => {
        expectTypeOf(req.params.name).toEqualTypeOf<string>();
        // @ts-expect-error not a parameter of this route
        req.params.other;
        expectTypeOf(req.pathgate?.params.dir).toEqualTypeOf<string | undefined>();
        res.end();
      });
      app.post('/w/*path', gate.write({ params: 'path' }), (req, res) => {
        expectTypeOf(req.params.path).toEqualTypeOf<string[]>();
        res.end();
      });
      app.post(
        '/u/:dir',
        gate.write({ file: 'f', under: 'uploads' }),
        upload.single('f'),
        (req, res) => {
          expectTypeOf(req.params.dir).toEqualTypeOf<string>();
          expectTypeOf(req.file?.pathgatePath).toEqualTypeOf<string | undefined>();
          res.end();
        },
      );
      router.get('/r/:dir', gate.read({ params: 'dir' }), express.json(), (req, res) => {
        expectTypeOf(req.params.dir).toEqualTypeOf<string>();
        res.end();
      });
      router
        .route('/r/*path')
        .get(gate.read({ params: 'path' }), (req, res) => {
          expectTypeOf(req.params.path).toEqualTypeOf<string[]>();
          res.end();
        })
        .post(gate.write({ params: 'path' }), upload.none(), (req, res) => {
          expectTypeOf(req.params.path).toEqualTypeOf<string[]>();
          res.end();
        });
      // Explicit route types still fit the gate.
      app.get<'/q', Record<string, never>, unknown, unknown, { q: number }>(
        '/q',
        gate.read({ query: 'q' }),
        (req, res) => {
          expectTypeOf(req.query.q).toEqualTypeOf<number>();
          res.end();
        },
      );
    };
    expectTypeOf(routes).toBeFunction();
  });

  it('req.pathgate and file.pathgatePath come from declaration merging', () => {
    const app = express();
    app.get('/files/*path', (req, res) => {
      expectTypeOf(req.pathgate).toEqualTypeOf<ExpressPathgateInfo | undefined>();
      expectTypeOf(req.pathgate).toMatchTypeOf<PathgateInfo | undefined>();
      // A route parameter is one path (a named wildcard's segments joined): a string.
      expectTypeOf(req.pathgate?.params.path).toEqualTypeOf<string | undefined>();
      expectTypeOf(req.pathgate?.query.path).toEqualTypeOf<string | string[] | undefined>();
      expectTypeOf(req.file?.pathgatePath).toEqualTypeOf<string | undefined>();
      // Named from this package, as from @pathgate/fastify: an app need not install the core.
      expectTypeOf(req.pathgate?.files).toEqualTypeOf<readonly CheckedFile[] | undefined>();
      // @ts-expect-error the checked paths are read-only to a handler
      req.pathgate?.files.push({ field: 'f', filename: 'x', path: '/x' });
      // @ts-expect-error so are the records
      if (req.pathgate) req.pathgate.params.path = '/etc/passwd';
      res.end();
    });
  });

  it('the errors are http-errors shaped', () => {
    expectTypeOf<PathgateDeniedError['status']>().toEqualTypeOf<403>();
    expectTypeOf<PathgateDeniedError['expose']>().toEqualTypeOf<true>();
    expectTypeOf<PathgateDeniedError['code']>().toEqualTypeOf<'PATHGATE_DENIED'>();
    expectTypeOf<PathgateDeniedError['denial']>().toEqualTypeOf<PathDenial>();
    expectTypeOf<PathgateStorageError['code']>().toEqualTypeOf<
      | 'PATHGATE_EXISTS'
      | 'PATHGATE_NOT_A_DIRECTORY'
      | 'PATHGATE_SYMLINK'
      | 'PATHGATE_NOT_A_FILE'
      | 'PATHGATE_NAME_TOO_LONG'
      | 'PATHGATE_FILE_TOO_LARGE'
      | 'PATHGATE_NO_SPACE'
      | 'PATHGATE_STORAGE_FAILED'
    >();
    // false for PATHGATE_STORAGE_FAILED, the server's fault.
    expectTypeOf<PathgateStorageError['expose']>().toEqualTypeOf<boolean>();
  });
});
