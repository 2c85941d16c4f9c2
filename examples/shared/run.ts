// Starts an example from the command line: picks the sandbox and the port,
// prints the URL, and on Ctrl-C, SIGTERM or SIGHUP closes the server and removes the
// temp sandbox it created (never a folder the user named).
import { rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSandbox, givenRoot, listenPort } from './sandbox.js';

/** A listening example: its URL, and how to stop it. */
export interface Started {
  url: string;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 only: the examples are for a local browser. */
export const HOST = '127.0.0.1';

/**
 * The longest a request may take to arrive whole, in ms: Node's default for
 * node:http servers. Fastify sets none, and a client that stopped sending
 * mid-upload would hold its connection, and the file being written, forever.
 */
export const REQUEST_TIMEOUT_MS = 300_000;

/**
 * The longest a connection may go with no byte sent either way, in ms, before
 * it is closed. A multipart parser can stall on a malformed body with
 * neither an end nor an error (test/busboy-hangs.test.ts); its body all
 * received, `requestTimeout` no longer applies, and the request, with the
 * upload it was writing, would be held as long as its client stays.
 */
export const IDLE_TIMEOUT_MS = 120_000;

/** How an example listens, where a test needs other than the defaults. */
export interface ListenOptions {
  /** `IDLE_TIMEOUT_MS` unless given. */
  idleTimeoutMs?: number;
}

/** The longest a stop waits for the requests it cut off to clean up, in ms. */
const STOP_GRACE_MS = 5_000;

/** Listens with a plain node:http server (Express), on 127.0.0.1. */
export function listenHttp(server: Server, port: number): Promise<Started> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, HOST, () => {
      server.off('error', reject);
      const { port: bound } = server.address() as AddressInfo;
      resolve({
        url: `http://${HOST}:${bound}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}

export async function runExample(
  framework: string,
  listen: (root: string, port: number) => Promise<Started>,
): Promise<void> {
  let root: string | undefined;
  let temporary = false;
  let server: Started | undefined;
  let stopping = false;
  let exiting = false;
  // The promise-based rm: Node 20's rmSync recurses a stack frame per folder
  // level and overflows (RangeError) on a tree about 2,000 deep, leaving the
  // sandbox behind. Clients make 32 folders at most (`FOLDER_DEPTH_MAX`), but
  // whoever else writes in the sandbox meanwhile may go deeper. Once: the
  // grace timer may fire while it runs.
  const exit = (code = 0) => {
    if (exiting) return;
    exiting = true;
    const removed =
      temporary && root ? rm(root, { recursive: true, force: true }) : Promise.resolve();
    removed.then(
      () => process.exit(code),
      (error: Error) => {
        console.error(`pathgate example: the sandbox ${root} was not removed: ${error.message}`);
        process.exit(1);
      },
    );
  };
  // Exits once the requests the close cut off have cleaned up (an upload
  // removes its temporary file and new folders), when nothing is left to
  // run; exiting at once left them in the folder served. At the latest
  // after STOP_GRACE_MS, should something never end.
  const close = (started: Started) =>
    started.close().finally(() => process.once('beforeExit', () => exit()));
  // Handled from the start: a stop while the server starts (the sandbox
  // made, not yet listening) closes it once it listens, sandbox and all.
  const stop = () => {
    if (stopping) return;
    stopping = true;
    setTimeout(exit, STOP_GRACE_MS).unref();
    if (server) close(server);
  };
  // Every time, not once: a terminal's Ctrl-C reaches the example again,
  // relayed by npm and tsx, while it removes the sandbox (seconds for a deep
  // tree); the default action of that second signal killed it midway and
  // left the sandbox. The grace timer bounds the stop; SIGKILL still ends it.
  // SIGHUP too: a closed terminal sends it, and its default action left the sandbox.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, stop);
  // What it prints is for whoever reads it, if anyone: a pipe whose reader is
  // gone (`npm run example | head -1`) failed a write with EPIPE, an 'error'
  // event nothing handled, which killed the example and left its sandbox.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
  try {
    const port = listenPort();
    root = givenRoot();
    if (root === undefined) {
      root = createSandbox();
      temporary = true;
    }
    server = await listen(root, port);
    if (stopping) close(server);
    else
      console.log(`pathgate example (${framework}) listening on ${server.url} — sandbox ${root}`);
  } catch (error) {
    console.error(`pathgate example (${framework}): ${(error as Error).message}`);
    exit(1);
  }
}
