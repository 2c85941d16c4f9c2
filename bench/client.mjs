// One request for the benchmarks' set-up checks and the load check's uploads.
import http from 'node:http';

/**
 * One request to 127.0.0.1 over a fresh connection, with the path sent as
 * written (a `..` stays a `..`); resolves with the status and the whole body.
 * A request still sending when the answer has ended stops sending (a refused
 * upload); no answer within `timeoutMs` is an error.
 */
export function request(port, { method, path, headers = {}, body }, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path, headers, agent: false, timeout: timeoutMs },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => {
          resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() });
          req.destroy();
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}
