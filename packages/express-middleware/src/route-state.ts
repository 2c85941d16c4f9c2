import type { RecordingInfo, RouteGuard } from '@pathgate/core';
import type { Request } from 'express';
import type { Deny } from './reply.js';

/**
 * What a gate middleware leaves for the gate's multer middleware on a
 * multipart request: the route's guard, the paths checked so far, and the
 * route's deny. Module-private (a WeakMap keyed by the request), so nothing
 * a client or another middleware sets can forge it.
 */
export interface RouteState {
  readonly guard: RouteGuard;
  readonly info: RecordingInfo;
  readonly deny: Deny;
  /** The route's gate lets denies through (and logs them). */
  readonly reportOnly: boolean;
}

/** A state and the Express route whose gate left it. */
interface Left {
  readonly route: unknown;
  readonly state: RouteState;
}

const states = new WeakMap<Request, Left[]>();

/** Every gate before the multer middleware leaves its own: each one's body specs wait for it. */
export function leaveRouteState(req: Request, state: RouteState): void {
  const left = states.get(req);
  const entry = { route: req.route, state };
  if (left === undefined) states.set(req, [entry]);
  else left.push(entry);
}

/**
 * Takes the states left on this request's route, once and in route order: a
 * second multer middleware finds none, and one on a later route (after
 * `next('route')` skipped this route's multer) never takes this route's.
 */
export function takeRouteStates(req: Request): readonly RouteState[] {
  const left = states.get(req) ?? [];
  states.delete(req);
  return left.filter((entry) => entry.route === req.route).map((entry) => entry.state);
}

const uploadHandlers = new WeakSet<object>();

/** Marks a gate multer middleware, so a gate can tell whether one follows it on its route. */
export function markUploadHandler<T extends object>(handler: T): T {
  uploadHandlers.add(handler);
  return handler;
}

interface RouteStack {
  stack?: readonly { handle?: unknown; method?: unknown }[];
}

/**
 * Whether a gate multer middleware that runs for this request's method
 * comes after `gate` on the request's route (Express's `req.route`, its
 * layers' handles and methods; `.all()` layers have none). A gate not on
 * `req.route` (used with `app.use`, or a stale route) finds none. Without
 * one, the multipart fields and files of the request can never be checked.
 */
export function uploadFollows(req: Request, gate: object): boolean {
  const stack = (req.route as RouteStack | undefined)?.stack;
  if (!Array.isArray(stack)) return false;
  const at = stack.findIndex((layer) => layer.handle === gate);
  if (at === -1) return false;
  const method = req.method.toLowerCase();
  return stack.some(
    (layer, i) =>
      i > at &&
      uploadHandlers.has(layer.handle as object) &&
      (layer.method === undefined || layer.method === method),
  );
}
