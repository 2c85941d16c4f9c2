import type { PathgateInfo } from '@pathgate/core';

/**
 * `PathgateInfo` as the gate fills it on Express: a route parameter is one
 * path, a string (a named wildcard's segments are joined with `/`).
 */
export interface ExpressPathgateInfo extends PathgateInfo {
  readonly params: Readonly<Record<string, string>>;
}

/** What pathgate adds to Express's request (merged into `Express.Request`). */
export interface PathgateRequestFields {
  /**
   * The canonical paths pathgate checked, by source and selector. Set once
   * every check passed; in report-only mode also after a reported deny, with
   * the values that passed only.
   */
  pathgate?: ExpressPathgateInfo;
}

/** What pathgate adds to multer's file (merged into `Express.Multer.File`). */
export interface PathgateFileFields {
  /** The canonical path pathgate checked this file's name as: store the file here (read-only). */
  readonly pathgatePath?: string;
}

// Declaration merging; exported types above keep it in the built d.ts.
declare global {
  namespace Express {
    interface Request extends PathgateRequestFields {}
    namespace Multer {
      interface File extends PathgateFileFields {}
    }
  }
}
