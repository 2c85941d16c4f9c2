// What the HTTP benchmarks share about their server processes: each sends
// { type: 'ready', port } over its IPC channel once it listens.

const START_TIMEOUT_MS = 30_000;

/**
 * The port a forked server reports when it listens. Rejects, naming the
 * server, if it exits, fails to start, or says nothing within 30 s.
 */
export function serverReady(child, name) {
  return new Promise((resolve, reject) => {
    const fail = (error) => {
      clearTimeout(timer);
      reject(error);
    };
    const timer = setTimeout(
      () => fail(new Error(`${name}: not listening after ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    child.on('message', (message) => {
      if (message?.type !== 'ready') return;
      clearTimeout(timer);
      resolve(message.port);
    });
    child.on('exit', (code, signal) =>
      fail(new Error(`${name}: server exited (${code ?? signal}) before listening`)),
    );
    child.on('error', fail);
  });
}
