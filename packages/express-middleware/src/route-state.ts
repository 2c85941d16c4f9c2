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

interface RouteLayer {
  handle?: unknown;
  method?: unknown;
}

interface RouteStack {
  stack?: readonly RouteLayer[];
}

/** A route's layers, and where a gate is among them. */
interface GateLayers {
  readonly stack: readonly RouteLayer[];
  readonly at: number;
}

/**
 * The layers of the request's route (Express's `req.route`) and where
 * `gate` is among them; undefined for a gate outside a route (in `app.use`
 * or `router.use`), where `req.route` is unset or an earlier route's.
 */
function gateLayers(req: Request, gate: object): GateLayers | undefined {
  const stack = (req.route as RouteStack | undefined)?.stack;
  if (!Array.isArray(stack)) return undefined;
  const at = stack.findIndex((layer) => layer.handle === gate);
  return at === -1 ? undefined : { stack, at };
}

/** The path of the route `gate` is on, or undefined for a gate outside a route. */
export function gateRoutePath(req: Request, gate: object): string | undefined {
  return gateLayers(req, gate) === undefined ? undefined : String(req.route.path);
}

/** The method whose layers run for the request: a route without HEAD ones runs its GET ones. */
function layerMethod(req: Request): string {
  const method = req.method.toLowerCase();
  const { methods } = req.route as { methods?: Record<string, boolean> };
  return method === 'head' && methods?.head !== true ? 'get' : method;
}

/**
 * Whether a gate multer middleware that runs for this request's method
 * comes after `gate` on its route (the layers' handles and methods;
 * `.all()` layers have none). A gate outside a route finds none. Without
 * one, the multipart fields and files of the request can never be checked.
 */
export function uploadFollows(req: Request, gate: object): boolean {
  const layers = gateLayers(req, gate);
  if (layers === undefined) return false;
  const method = layerMethod(req);
  return layers.stack.some(
    (layer, i) =>
      i > layers.at &&
      uploadHandlers.has(layer.handle as object) &&
      (layer.method === undefined || layer.method === method),
  );
}
