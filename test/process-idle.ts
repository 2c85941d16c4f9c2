import { setImmediate as turn } from 'node:timers/promises';

/** What a request still being served holds: a file system call, a file or connection closing, a connection. */
const BUSY = new Set(['FSReqPromise', 'FSReqCallback', 'CloseReq', 'TCPSocketWrap', 'ConnectWrap']);

/** How many turns of the event loop in a row must find nothing busy. */
const IDLE_TURNS = 10;

/** A bound on the turns waited: a request that never ends is an error, not a test that hangs. */
const MAX_TURNS = 200_000;

/** Connections, which a request that waits on its client keeps open. */
const CONNECTIONS = new Set(['TCPSocketWrap', 'ConnectWrap']);

/**
 * Resolves once this process (the servers under test run in it) has had no
 * fs call in flight and no open connection for `IDLE_TURNS` turns in a row:
 * every request, also one whose client hung up, is done cleaning up.
 * `connections: false`: open connections do not count, so a request that
 * waits for more of its body (or hangs) is as far as it gets.
 */
export async function idle({ connections = true } = {}): Promise<void> {
  const counted = (type: string) => BUSY.has(type) && (connections || !CONNECTIONS.has(type));
  for (let turns = 0, quiet = 0; quiet < IDLE_TURNS; turns++) {
    if (turns === MAX_TURNS) {
      throw new Error(`still busy: ${process.getActiveResourcesInfo().join(', ')}`);
    }
    await turn();
    const busy = process.getActiveResourcesInfo().some(counted);
    quiet = busy ? 0 : quiet + 1;
  }
}
