/** The most characters of a canonical path a log line shows. */
const LOGGED_PATH_MAX = 1024;

/**
 * A canonical path as the adapters log it: whole when short, else its start
 * and how much was left out. The client picks its length (a 1 MiB body
 * value), and a deny log line must not copy it: one request would write a
 * megabyte of log. Never cut between the halves of a surrogate pair.
 */
export function loggedPath(path: string): string {
  if (path.length <= LOGGED_PATH_MAX) return path;
  const high = path.charCodeAt(LOGGED_PATH_MAX - 1);
  const end = high >= 0xd800 && high <= 0xdbff ? LOGGED_PATH_MAX - 1 : LOGGED_PATH_MAX;
  const left = path.length - end;
  return `${path.slice(0, end)}… (${left} more character${left === 1 ? '' : 's'})`;
}
