// Starts the Express example: `npm run example:express` from the repository root,
// or `npx tsx examples/express-files/server.ts [--port 3000] [--root ./folder]`.
import { runExample } from '../shared/run.js';
import { listen } from './app.js';

await runExample('express', listen);
