import { IncomingMessage } from 'node:http';
import type { CheckedPaths, PathgateInfo } from '@pathgate/core';
import type { Request, Response } from 'express';

/**
 * Where `req.pathgate` lives: `res.locals`, under a key only this module
 * holds, read back through an accessor on Express's request prototype.
 *
 * Why not `req.pathgate = info`: Express 5 moves every request onto its
 * app's prototype (`Object.setPrototypeOf`), and from then on V8 shares no
 * hidden class between requests, so each property added to a request builds
 * a new one: about 1.6 µs per request here, more than the whole check.
 * `res.locals` is a dictionary (`Object.create(null)`) that takes a key in
 * about 0.2 µs. Extending `express.request` is Express's documented way to
 * give every request a property.
 */
const kInfo = Symbol('pathgate.info');

type Locals = Record<PropertyKey, unknown>;

interface InfoHolder {
  res?: { locals?: Locals };
}

/** The accessor's getter: the info a gate recorded for this request, if any. */
function getInfo(this: InfoHolder): PathgateInfo | undefined {
  return this.res?.locals?.[kInfo] as PathgateInfo | undefined;
}

/** An assignment (`req.pathgate = …` in the app) shadows the accessor with an own property. */
function setInfoProperty(this: object, value: unknown): void {
  Object.defineProperty(this, 'pathgate', {
    value,
    writable: true,
    enumerable: true,
    configurable: true,
  });
}

const ACCESSOR: PropertyDescriptor = {
  get: getInfo,
  set: setInfoProperty,
  enumerable: false,
  configurable: true,
};

/** The last request prototype seen to carry the accessor: the usual case costs one compare. */
let ready: object | null = null;

/**
 * Puts the accessor on the prototype of Express's requests: the one whose
 * own prototype is `IncomingMessage.prototype` (`express.request`, shared
 * by every app, so a sub-app's requests read it too). False when the
 * request's chain has no such object, or that object already has another
 * `pathgate`.
 */
function ensureAccessor(req: Request): boolean {
  const proto = Object.getPrototypeOf(req) as object | null;
  if (proto === ready) return true;
  let base = proto;
  while (base !== null && Object.getPrototypeOf(base) !== IncomingMessage.prototype) {
    // An app's own `pathgate` on its request prototype would hide the accessor.
    if (Object.hasOwn(base, 'pathgate')) return false;
    base = Object.getPrototypeOf(base) as object | null;
  }
  if (base === null) return false;
  const own = Object.getOwnPropertyDescriptor(base, 'pathgate');
  if (own === undefined) Object.defineProperty(base, 'pathgate', ACCESSOR);
  else if (own.get !== getInfo) return false;
  ready = proto;
  return true;
}

const isEmpty = (record: CheckedPaths): boolean => Object.keys(record).length === 0;

/** One source's paths from two gates: `over`'s win where both record under one key. */
function mergedRecord(under: CheckedPaths, over: CheckedPaths): CheckedPaths {
  if (isEmpty(under)) return over;
  return isEmpty(over) ? under : { ...under, ...over };
}

/**
 * A second gate on the request (`gate.read({ body: 'from' })` then
 * `gate.write({ body: 'to' })`): `req.pathgate` gathers both gates' paths,
 * with the later gate's mode; `keepEarlier` gives the earlier gate's mode,
 * and its path where both record under one key.
 */
function mergedInfo(
  earlier: PathgateInfo,
  later: PathgateInfo,
  keepEarlier: boolean,
): PathgateInfo {
  const [under, over] = keepEarlier ? [later, earlier] : [earlier, later];
  return {
    mode: over.mode,
    params: mergedRecord(under.params, over.params),
    query: mergedRecord(under.query, over.query),
    body: mergedRecord(under.body, over.body),
    headers: mergedRecord(under.headers, over.headers),
    files: [...earlier.files, ...later.files],
  };
}

/** Records only report-only gates made: none of their paths was enforced. */
const reportedOnly = new WeakSet<PathgateInfo>();

/**
 * `info`, from a gate that is `reportOnly` or not, joined to what earlier
 * gates recorded. A report-only gate never replaces an enforcing gate's
 * path or mode (it reports, and decides nothing, as for a file): a rollout
 * gate added to an enforced route would otherwise hand the handler a path
 * only it checked, under its own rules.
 */
function joinedInfo(
  earlier: PathgateInfo | undefined,
  info: PathgateInfo,
  reportOnly: boolean,
): PathgateInfo {
  const enforcedBefore = earlier !== undefined && !reportedOnly.has(earlier);
  const joined =
    earlier === undefined ? info : mergedInfo(earlier, info, reportOnly && enforcedBefore);
  if (reportOnly && !enforcedBefore) reportedOnly.add(joined);
  return joined;
}

/** The record gates set as each request's own property (outside Express's usual wiring). */
const ownInfos = new WeakMap<Request, PathgateInfo>();

/**
 * Stores `info` in `locals`, joined to an earlier gate's: false when the
 * app's locals take no key (frozen, sealed, a proxy that refuses or throws;
 * a throw in strict code, a silent miss in sloppy), so the request holds
 * the paths instead, never a 500.
 */
function storedInLocals(locals: Locals, info: PathgateInfo, reportOnly: boolean): boolean {
  try {
    const joined = joinedInfo(locals[kInfo] as PathgateInfo | undefined, info, reportOnly);
    locals[kInfo] = joined;
    return locals[kInfo] === joined;
  } catch {
    return false;
  }
}

/** Makes `info` (a `reportOnly` gate's or not) the request's `req.pathgate`, joined to what an earlier gate recorded. */
export function setPathgateInfo(
  req: Request,
  res: Response,
  info: PathgateInfo,
  reportOnly: boolean,
): void {
  const locals = res.locals as Locals | undefined;
  const own = Object.hasOwn(req, 'pathgate');
  if (
    !own &&
    req.res === res &&
    typeof locals === 'object' &&
    locals !== null &&
    ensureAccessor(req) &&
    storedInLocals(locals, info, reportOnly)
  ) {
    return;
  }
  // Joined only to the record a gate set on this request: never to a value the app assigned.
  const earlier = ownInfos.get(req);
  const current = own ? (req as { pathgate?: unknown }).pathgate : undefined;
  const joined = joinedInfo(earlier === current ? earlier : undefined, info, reportOnly);
  ownInfos.set(req, joined);
  setInfoProperty.call(req, joined);
}
