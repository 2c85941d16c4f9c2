/**
 * Work run one turn at a time per key, in the order it came: each turn
 * starts once the key's earlier ones have settled, either way. A key's
 * entry goes with its last turn, so the map never outgrows the work in
 * flight.
 */
export class Turns<K> {
  private readonly last = new Map<K, Promise<void>>();

  /** Runs `work` once the earlier turns of `key` are done. */
  run<T>(key: K, work: () => Promise<T>): Promise<T> {
    const turn = this.settled(key).then(work);
    const settled = turn.then(
      () => {},
      () => {},
    );
    this.last.set(key, settled);
    void settled.then(() => {
      if (this.last.get(key) === settled) this.last.delete(key);
    });
    return turn;
  }

  /** Settles once every turn of `key` begun so far has. */
  settled(key: K): Promise<void> {
    return this.last.get(key) ?? Promise.resolve();
  }
}

/**
 * One turn at a time at each name: a store giving a file its name (keep the
 * old one, then rename) and a removal (check the file there is the
 * request's, then put the old one back or unlink) each look, then act. Two
 * overlapping at one name would each act on what the other just changed:
 * a removal putting back, or unlinking, over another request's file stored
 * since its look, after which that request's 201 names a file that is gone.
 */
export const nameTurns = new Turns<string>();
