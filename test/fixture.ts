// One example app for a whole describe block, instead of a `let app` and a
// pair of hooks in every suite.
import { afterAll, beforeAll } from 'vitest';
import type { ListenOptions } from '../examples/shared/run.js';
import { type Example, type Running, start } from './examples.js';

/** What a suite's tests read of its running example. */
export type Served = Omit<Running, 'stop'>;

/**
 * Starts `example` in `beforeAll` and stops it in `afterAll`, both registered
 * here: called before the suite's own hooks, the app is up when theirs run
 * and stopped after theirs (vitest runs after-hooks last registered first).
 */
export function startedForSuite(example: Example, options?: ListenOptions): Served {
  let app: Running | undefined;
  beforeAll(async () => {
    app = await start(example, options);
  });
  afterAll(() => app?.stop());
  const running = (): Running => {
    if (app === undefined) throw new Error('the example starts in beforeAll');
    return app;
  };
  return {
    get url() {
      return running().url;
    },
    get port() {
      return running().port;
    },
    get root() {
      return running().root;
    },
  };
}
