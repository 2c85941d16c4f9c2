// Preloaded into the example under test by bench/load.mjs (`node --expose-gc
// --require`): on SIGUSR2, two full garbage collections, then one line with
// process.memoryUsage() on stdout. Memory read after a full collection shows
// what the process keeps, not how far its collector happened to let it grow.
process.on('SIGUSR2', () => {
  globalThis.gc();
  globalThis.gc();
  process.stdout.write(`pathgate-load-memory ${JSON.stringify(process.memoryUsage())}\n`);
});
