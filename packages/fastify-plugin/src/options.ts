import {
  type AdapterPolicyOptions,
  type AdapterRuleOptions,
  type AdapterSettings,
  type PathDenial,
  readAdapterOptions,
} from '@pathgate/core';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Called on every deny. It may log, add headers (`reply.header()`), or
 * return an object to send as the 403 body instead of the default one (it
 * must not reveal paths either); any other return value is ignored, and a
 * promise is no body. A throw, like a rejection, is logged at `error`, and
 * the deny goes on with the default body. In report-only mode it is called
 * for what would have been denied, and its return value is ignored.
 */
export type DenyHandler = (
  denial: PathDenial,
  request: FastifyRequest,
  reply: FastifyReply,
) => unknown;

/** A ready policy, shared with other code. */
export interface PathgatePolicyOptions extends AdapterPolicyOptions<DenyHandler> {}

/** The policy's parts: the plugin builds the `PermissionPolicy`. */
export interface PathgateRuleOptions extends AdapterRuleOptions<DenyHandler> {}

/** The plugin's options (see the README's options table). */
export type PathgateOptions = PathgatePolicyOptions | PathgateRuleOptions;

/** The validated options: what the hooks read at request time. */
export type PathgateSettings = AdapterSettings<DenyHandler>;

/**
 * Fastify's own register options: it passes them in with the plugin's, so
 * they are no typos. pathgate ignores them, and as fastify-plugin lifts it
 * out of encapsulation, Fastify does too.
 */
const REGISTER_OPTIONS = ['prefix', 'logLevel', 'logSerializers'] as const;

/** Validates the plugin options once, at registration; every problem is a TypeError naming the option. */
export function readOptions(options: unknown): PathgateSettings {
  return readAdapterOptions<DenyHandler>(options, REGISTER_OPTIONS).settings;
}
