import { compileRouteGuard, PermissionPolicy } from '@pathgate/core';
import type { NextFunction, Request, Response } from 'express';
import type { StorageEngine } from 'multer';
import { expect, it } from 'vitest';
import type { Settings } from '../src/options.js';
import { Upload } from '../src/upload.js';

// multer sets no limit on files: a client may send a few hundred thousand
// tiny ones. Handing them to the handler must not build an argument list
// per file (a RangeError thrown inside busboy's event: the process died).

it('hands 300,000 accepted files to req.pathgate, which a spread push cannot', () => {
  const policy = new PermissionPolicy({ root: '/srv', permissions: { fs: ['rw:./uploads/**'] } });
  const guard = compileRouteGuard(
    policy,
    { mode: 'write', paths: [{ file: 'f', under: 'uploads' }] },
    'POST /up',
  );
  const info = guard.newInfo();
  const req = { body: {} } as Request;
  const res = { locals: {} } as Response;
  const reached: unknown[] = [];
  const next = ((error?: unknown) => reached.push(error ?? 'handler')) as NextFunction;
  const upload = new Upload({
    req,
    res,
    next,
    routes: [{ guard, info, deny: () => false, reportOnly: false }],
    deny: () => false,
    settings: { reportOnly: false } as Settings,
    storage: {} as StorageEngine,
    onOrphan: () => {},
  });
  const file = { field: 'f', filename: 'a', path: '/srv/uploads/a' };
  upload.parsed(); // multer read the body
  for (let i = 0; i < 300_000; i++) upload.accepted.push(file);
  upload.finish(undefined);
  expect(reached).toEqual(['handler']);
  expect(info.files).toHaveLength(300_000);
});
