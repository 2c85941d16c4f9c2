/**
 * The folders the kernel walks to look a path up: below /proc/self/fd/<fd>
 * (a folder resolveSymlinks holds open), or from `/`; the last name counts.
 */
export function foldersWalked(lookup: string): number {
  const below = /^\/proc\/self\/fd\/\d+(\/.*)$/.exec(lookup)?.[1] ?? lookup;
  return below.split('/').length - 1;
}
