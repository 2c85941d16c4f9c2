/**
 * `target[key]` as a keyed load: how this adapter reads the own properties
 * of Express's requests and responses (`req.params`, `req.body`, `req.res`,
 * `res.locals`).
 *
 * Express 5 moves each request and response onto its app's prototype
 * (`Object.setPrototypeOf`) and then adds properties to it; from then on V8
 * gives every request and every response a hidden class of its own. A named
 * load (`req.params`) then misses its inline cache on every request and asks
 * V8's runtime, about 140 ns each in an Express handler here; a keyed load
 * finds an own property in generated code, about 35 ns (bench/README.md,
 * "Express requests"). Properties on the prototype (`req.query`,
 * `req.headers`: getters) cost the same either way and are read by name.
 */
export function readKey(target: object, key: string): unknown {
  return (target as Record<string, unknown>)[key];
}
