import http from 'node:http';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { type Answer, readAnswer } from '../../../test/answer.js';
import { type PathgateRuleOptions, pathgate } from '../src/index.js';
import { countingErrorHandler, type Served, serve } from './helpers.js';

// A deny answered while the request body is still arriving closes the
// connection (`Connection: close`, then a lingering close, so keep-alive never
// waits on a refused body); one answered after the body was read whole, or
// for a request without a body, keeps it. Report-only closes nothing: the
// request goes on and its body is read.

const ROOT = '/srv/root';
const FIRST = '{"to":';
const REST = '"uploads/a"}';

interface Setup {
  served: Served;
  /** Resolves once the gate has reported a deny (through `log`). */
  reported: Promise<void>;
}

/** Runs `test` against an app whose routes deny `?path=../x`, then closes it. */
async function withApp(options: Partial<PathgateRuleOptions>, test: (s: Setup) => Promise<void>) {
  let report = () => {};
  const reported = new Promise<void>((resolve) => {
    report = resolve;
  });
  const gate = pathgate({ root: ROOT, fs: ['rw:uploads/**'], log: () => report(), ...options });
  const app = express();
  const echo: express.RequestHandler = (req, res) => {
    res.json({ body: req.body ?? null });
  };
  // The gate before the body parser: a query deny comes while the body may be arriving.
  app.post('/early', gate.write({ query: 'path' }), express.json(), echo);
  // The body parsed first: a deny comes after the body was read whole.
  app.post('/parsed', express.json(), gate.write({ body: 'to' }), echo);
  app.use(countingErrorHandler().handler);
  const served = await serve(app);
  try {
    await test({ served, reported });
  } finally {
    await served.close();
  }
}

/** A keep-alive POST (the client asks to keep the connection). */
function post(
  port: number,
  path: string,
  headers: http.OutgoingHttpHeaders = {},
): { req: http.ClientRequest; answer: Promise<Answer> } {
  const agent = new http.Agent({ keepAlive: true });
  const req = http.request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path,
    agent,
    headers: { 'content-type': 'application/json', ...headers },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => readAnswer(res).then(resolve, reject));
    req.on('error', reject);
  });
  req.on('close', () => agent.destroy());
  return { req, answer };
}

/** Sends the headers and the first bytes of a JSON body, and holds the rest. */
function held(port: number, path: string, chunked = false) {
  const length = Buffer.byteLength(FIRST + REST);
  const sent = post(port, path, chunked ? {} : { 'content-length': length });
  sent.req.write(FIRST);
  return sent;
}

const connection = (answer: Answer) => `${answer.status} ${answer.headers.connection}`;

describe('an enforced deny', () => {
  it('while the body is still arriving closes the connection (content-length or chunked)', async () => {
    await withApp({}, async ({ served }) => {
      for (const chunked of [false, true]) {
        const { req, answer } = held(served.port, '/early?path=../x', chunked);
        try {
          expect(connection(await answer)).toBe('403 close');
        } finally {
          req.destroy();
        }
      }
    });
  });

  it('after the body was read whole, or with an empty one, keeps the connection', async () => {
    await withApp({}, async ({ served }) => {
      const parsed = post(served.port, '/parsed');
      parsed.req.end('{"to":"../x"}');
      expect(connection(await parsed.answer)).toBe('403 keep-alive');
      const empty = post(served.port, '/early?path=../x', { 'content-length': 0 });
      empty.req.end();
      expect(connection(await empty.answer)).toBe('403 keep-alive');
    });
  });
});

describe('report-only', () => {
  const throwing = () => {
    throw new Error('audit sink down');
  };
  it.each([
    ['', {}],
    [', also when onDeny throws (logged)', { onDeny: throwing }],
  ])(
    'closes nothing: the request goes on, reads the rest of its body, and keeps the connection%s',
    async (_, options) => {
      await withApp({ reportOnly: true, ...options }, async ({ served, reported }) => {
        const { req, answer } = held(served.port, '/early?path=../x');
        await reported; // the deny was reported while the body was still arriving
        req.end(REST);
        const done = await answer;
        expect(connection(done)).toBe('200 keep-alive');
        expect(done.json).toEqual({ body: { to: 'uploads/a' } });
      });
    },
  );
});
