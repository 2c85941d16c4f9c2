import type express from 'express';
import { describe, expect, it } from 'vitest';
import * as served from '../../../test/served-files.js';
import { pathgate } from '../src/index.js';
import { onApp, request } from './helpers.js';

// The README's route, as written: res.sendFile with the checked path. It
// answers as the Fastify plugin's @fastify/static recipe does (same table).

function build(root: string, app: express.Express): void {
  served.writeServedFiles(root);
  const gate = pathgate({ root, fs: served.SERVED_RULES });
  app.get('/files/*path', gate.read({ params: 'path' }), (req, res) => {
    const path = req.pathgate?.params.path; // the checked, canonical path
    if (path === undefined) return res.sendStatus(404);
    res.sendFile(path, { dotfiles: 'allow' }); // the policy decides dotfiles (its dot option)
  });
}

describe('README: res.sendFile with the checked path', () => {
  it('serves the file the check saw, its name as written', () =>
    onApp(build, async (port) => {
      for (const [path, text] of [...served.SERVED, served.BACKSLASH]) {
        const answer = await request(port, 'GET', `/files/${path}`);
        expect([path, answer.status, answer.text]).toEqual([path, 200, text]);
      }
    }));

  it("a folder the rules allow: a 404, not its index.html, which they don't", () =>
    onApp(build, async (port, _root, errors) => {
      for (const path of served.FOLDER) {
        for (const method of ['GET', 'HEAD']) {
          const answer = await request(port, method, `/files/${path}`);
          expect([method, path, answer.status, answer.text.includes('index')]).toEqual([
            method,
            path,
            404,
            false,
          ]);
        }
      }
      expect(errors).toEqual([]);
    }));
});
