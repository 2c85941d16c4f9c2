import type { MultipartFile, SavedMultipartFile } from '@fastify/multipart';
import { PermissionPolicy } from '@pathgate/core';
import Fastify, {
  type FastifyReply,
  type FastifyRequest,
  type RouteShorthandOptions,
} from 'fastify';
import { describe, expect, expectTypeOf, it } from 'vitest';
import pathgate, {
  type CheckedFile,
  type GuardDenyReason,
  type PathDenial,
  type PathgateDenied,
  PathgateDeniedError,
  type PathgateInfo,
  type PathgateOptions,
  type PathgateRouteConfig,
  type RouteGuardOptions,
} from '../src/index.js';

// Type tests, checked by `tsc` (the root tsconfig includes this file): the
// route config and the request decoration by declaration merging, the
// multipart part's pathgatePath, the options union, the thrown error.

const app = Fastify();
type Config = NonNullable<RouteShorthandOptions['config']>;

describe('config.pathgate on a route', () => {
  it('accepts the issue examples', () => {
    app.get(
      '/files/*',
      { config: { pathgate: { mode: 'read', paths: [{ params: '*' }] } } },
      async () => '',
    );
    app.post(
      '/move',
      { config: { pathgate: { mode: 'write', paths: [{ body: 'from' }, { body: 'to' }] } } },
      async () => '',
    );
    app.post(
      '/upload',
      { config: { pathgate: { mode: 'write', paths: [{ file: 'avatar', under: 'uploads' }] } } },
      async () => '',
    );
    app.get(
      '/q',
      {
        config: {
          pathgate: {
            mode: 'read',
            paths: [
              { query: 'p', optional: true },
              { headers: 'x-path' },
              { body: ['a', 0, 'b'] },
              { file: true },
            ],
          },
        },
      },
      async () => '',
    );
    expectTypeOf<PathgateRouteConfig>().toEqualTypeOf<RouteGuardOptions>();
  });

  it('rejects bad declarations', () => {
    // @ts-expect-error: mode is "read" or "write"
    const mode: Config = { pathgate: { mode: 'rw', paths: [{ params: '*' }] } };
    // @ts-expect-error: one source per spec
    const two: Config = { pathgate: { mode: 'read', paths: [{ params: 'a', query: 'b' }] } };
    // @ts-expect-error: a header is one name
    const header: Config = { pathgate: { mode: 'read', paths: [{ headers: ['x'] }] } };
    // @ts-expect-error: file is a field name or true
    const file: Config = { pathgate: { mode: 'read', paths: [{ file: false }] } };
    // @ts-expect-error: optional is a boolean
    const optional: Config = { pathgate: { mode: 'read', paths: [{ body: 'a', optional: 1 }] } };
    // @ts-expect-error: paths is required
    const paths: Config = { pathgate: { mode: 'read' } };
    expectTypeOf([mode, two, header, file, optional, paths]).toBeArray();
  });

  it('takes undefined as no declaration, as at run time', async () => {
    const guarded = Fastify();
    await guarded.register(pathgate, { fs: [] });
    // A declaration switched off (`isPublic ? undefined : declaration`) under exactOptionalPropertyTypes.
    guarded.get('/plain', { config: { pathgate: undefined } }, async (request) => ({
      pathgate: request.pathgate,
    }));
    try {
      expect((await guarded.inject('/plain')).json()).toEqual({ pathgate: null });
    } finally {
      await guarded.close();
    }
  });

  it('is readable from routeOptions', () => {
    app.get('/g', async (request) => {
      expectTypeOf(request.routeOptions.config.pathgate).toEqualTypeOf<
        RouteGuardOptions | undefined
      >();
      return '';
    });
  });
});

describe('request.pathgate', () => {
  it('is PathgateInfo, null, or undefined where pathgate is not registered, read-only', () => {
    expectTypeOf<FastifyRequest['pathgate']>().toEqualTypeOf<PathgateInfo | null | undefined>();
    app.get('/h', async (request) => {
      const info = request.pathgate;
      if (!info) return 'unguarded';
      expectTypeOf(info.mode).toEqualTypeOf<'read' | 'write'>();
      expectTypeOf(info.params['*']).toEqualTypeOf<string | string[] | undefined>();
      expectTypeOf(info.files).toEqualTypeOf<readonly CheckedFile[]>();
      // @ts-expect-error the checked files are read-only to a handler
      info.files.push(info.files[0] as CheckedFile);
      expectTypeOf<CheckedFile>().toEqualTypeOf<{
        readonly field: string;
        readonly filename: string;
        readonly path: string;
      }>();
      // @ts-expect-error: read-only
      request.pathgate = null;
      return info.body.from;
    });
  });

  it('holds a list for a param a schema turned into one: the type is not narrowed to string as on Express', async () => {
    // Fastify's default Ajv coerces with coerceTypes 'array', and the check runs after validation.
    const coerced = Fastify();
    await coerced.register(pathgate, { root: '/srv', fs: ['docs/**'] });
    const schema = { params: { type: 'object', properties: { p: { type: 'array' } } } };
    const declaration: RouteGuardOptions = { mode: 'read', paths: [{ params: 'p' }] };
    coerced.get('/d/:p', { schema, config: { pathgate: declaration } }, async (request) => {
      const checked = request.pathgate?.params.p;
      expectTypeOf(checked).toEqualTypeOf<string | string[] | undefined>();
      return { checked };
    });
    try {
      expect((await coerced.inject('/d/docs')).json()).toEqual({ checked: ['/srv/docs'] });
    } finally {
      await coerced.close();
    }
  });

  it('is undefined in an app or a sibling context that never registered pathgate', async () => {
    const plain = Fastify();
    plain.register(async (sibling) => {
      sibling.get('/u', async (request) => {
        const info = request.pathgate;
        if (info === null) return 'unguarded';
        // Compiled, never run: a null check alone lets undefined through, to a crash.
        // @ts-expect-error info is possibly undefined
        const crash = () => info.body;
        expectTypeOf(crash).toBeFunction();
        return { registered: info !== undefined };
      });
    });
    plain.register(async (child) => {
      await child.register(pathgate, { fs: [] });
      child.get('/g', async (request) => ({ pathgate: request.pathgate }));
    });
    try {
      expect((await plain.inject('/u')).json()).toEqual({ registered: false });
      expect((await plain.inject('/g')).json()).toEqual({ pathgate: null });
    } finally {
      await plain.close();
    }
  });
});

describe('multipart parts', () => {
  it('carry an optional pathgatePath, also once saved', () => {
    expectTypeOf<MultipartFile['pathgatePath']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<SavedMultipartFile['pathgatePath']>().toEqualTypeOf<string | undefined>();
  });

  it('keep pathgatePath read-only: a handler writes where the check looked', () => {
    const retarget = (part: MultipartFile) => {
      // @ts-expect-error: a new target would be a path no one checked
      part.pathgatePath = `/srv/files/${part.filename}`;
    };
    expectTypeOf(retarget).toBeFunction();
  });
});

describe('options', () => {
  it('take a policy or its parts, not both', () => {
    const policy = new PermissionPolicy({ root: '/srv', permissions: { fs: [] } });
    app.register(pathgate, { root: '/srv', fs: ['./public/**'], dot: false, resolve: (p) => p });
    app.register(pathgate, { policy, reportOnly: true, lingerMs: 1000, lingerBytes: 1 << 20 });
    // An own key holding undefined counts as absent.
    app.register(pathgate, { policy, root: undefined, fs: undefined });
    // @ts-expect-error: both a policy and rules
    app.register(pathgate, { policy, fs: [] });
    // @ts-expect-error: fs is required without a policy
    app.register(pathgate, { root: '/srv' });
    // @ts-expect-error: unknown option
    app.register(pathgate, { fs: [], bogus: true });
    // Fastify's register options come with the plugin's.
    app.register(pathgate, { fs: [], prefix: '/api', logLevel: 'warn', logSerializers: {} });
    expectTypeOf<{ fs: string[] }>().toExtend<PathgateOptions>();
  });

  it('onDeny sees the denial, request and reply; returns nothing or a body', () => {
    const onDeny: NonNullable<PathgateOptions['onDeny']> = (denial, request, reply) => {
      expectTypeOf(denial).toEqualTypeOf<PathDenial>();
      expectTypeOf(request).toEqualTypeOf<FastifyRequest>();
      expectTypeOf(reply).toEqualTypeOf<FastifyReply>();
      return denial.reason === 'missing-path' ? undefined : { reason: denial.reason };
    };
    app.register(pathgate, { fs: [], onDeny });
    app.register(pathgate, { fs: [], onDeny: () => {} });
  });
});

describe('the thrown deny', () => {
  it('carries code, statusCode, reason and label', () => {
    const error: PathgateDenied = new PathgateDeniedError({ reason: 'nul-byte', label: 'file *' });
    expectTypeOf(error.code).toEqualTypeOf<'PATHGATE_DENIED'>();
    expectTypeOf(error.statusCode).toEqualTypeOf<403>();
    expectTypeOf(error.reason).toEqualTypeOf<GuardDenyReason>();
    expectTypeOf(error.label).toEqualTypeOf<string>();
  });

  it('is made from a denial, never from a bare message', () => {
    // @ts-expect-error a message alone would leave reason and label undefined
    new PathgateDeniedError('file *: path denied (nul-byte)');
    expectTypeOf(PathgateDeniedError).constructorParameters.toEqualTypeOf<[PathDenial]>();
  });

  it("instanceof narrows an error handler's error to it", () => {
    const app = Fastify();
    app.setErrorHandler((error, _request, reply) => {
      if (!(error instanceof PathgateDeniedError)) return reply.send(error);
      expectTypeOf(error).toMatchTypeOf<PathgateDenied>();
      return reply.code(error.statusCode).send({ reason: error.reason, label: error.label });
    });
  });
});
