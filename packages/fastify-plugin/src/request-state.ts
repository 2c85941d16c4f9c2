import type { PathDenial, RecordingInfo, RouteGuard } from '@pathgate/core';
import type { FastifyRequest } from 'fastify';

/** What one guarded request carries between its hooks. */
export interface RequestState {
  readonly guard: RouteGuard;
  /** What `request.pathgate` returns. */
  readonly info: RecordingInfo;
  /**
   * Started by the app-wide hooks (a route the `onRoute` hook never saw), so
   * only those hooks act on it; route-level hooks close over their guard.
   */
  readonly appWide: boolean;
  /**
   * Every value passed (or was reported): the guarded handler then runs the
   * route's handler without checking again.
   */
  checked: boolean;
  /**
   * A multipart read was refused (a file part, or a required file missing):
   * later multipart calls throw the same deny.
   */
  refused: PathDenial | undefined;
  /** The 403 body of a deny thrown out of a multipart iteration, for `onSend`. */
  thrownBody: object | undefined;
  /**
   * For `onSend`, set where multipart is wrapped: the required files' deny
   * of a `files()`/`parts()` iteration the handler dropped (`dropped`).
   */
  droppedDenial: (() => PathDenial | undefined) | undefined;
  /**
   * An answer went out while the body was still arriving and ended the
   * upload: the rest is dropped, so a multipart read starting now would wait
   * forever.
   */
  uploadEnded: boolean;
}

/**
 * Decorated once (`null`), set on guarded routes by the first pathgate hook
 * (or guarded handler) that runs for the request.
 */
export const kState: unique symbol = Symbol('pathgate.state');

type StatefulRequest = FastifyRequest & { [kState]: RequestState | null };

/** Contexts made before the plugin was registered miss the decoration: `undefined` there. */
export function stateOf(request: FastifyRequest): RequestState | null {
  return (request as StatefulRequest)[kState] ?? null;
}

export function startState(
  request: FastifyRequest,
  guard: RouteGuard,
  appWide: boolean,
): RequestState {
  const state: RequestState = {
    guard,
    info: guard.newInfo(),
    appWide,
    checked: false,
    refused: undefined,
    thrownBody: undefined,
    droppedDenial: undefined,
    uploadEnded: false,
  };
  (request as StatefulRequest)[kState] = state;
  return state;
}
