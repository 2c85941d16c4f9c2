// Preloaded into an example by a test: each server's listen waits 500 ms, so
// that a signal sent once the example made its sandbox is handled before it
// listens (unslowed, it listens before the signal's handler gets to run).
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function slowListen(this: net.Server, ...args: unknown[]) {
  setTimeout(() => Reflect.apply(listen, this, args), 500);
  return this;
} as typeof listen;
