// Starts the Fastify example: `npm run example` from the repository root, or
// `npx tsx examples/fastify-files/server.ts [--port 3000] [--root ./folder]`.
import { runExample } from '../shared/run.js';
import { listen } from './app.js';

await runExample('fastify', listen);
