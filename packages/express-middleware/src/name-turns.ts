// One turn at a time at each name: a store giving a file its name (keep the
// old one, then rename) and a removal (check the file there is the
// request's, then put the old one back or unlink) each look, then act. Two
// overlapping at one name would each act on what the other just changed:
// a removal putting back, or unlinking, over another request's file stored
// since its look, after which that request's 201 names a file that is gone.

/** Each name's last turn: the next one, of any request, starts after it. */
const lastTurn = new Map<string, Promise<void>>();

/** Runs `work` once the earlier turns at `path` are done. The entry goes with the name's last turn. */
export function inNameTurn<T>(path: string, work: () => Promise<T>): Promise<T> {
  const turn = (lastTurn.get(path) ?? Promise.resolve()).then(work);
  const settled = turn.then(
    () => {},
    () => {},
  );
  lastTurn.set(path, settled);
  void settled.then(() => {
    if (lastTurn.get(path) === settled) lastTurn.delete(path);
  });
  return turn;
}
