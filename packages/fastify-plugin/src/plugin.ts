import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { createRequestHooks } from './hook.js';
import { type PathgateOptions, readOptions } from './options.js';
import { createOnSend } from './reply.js';
import { kState, stateOf } from './request-state.js';
import { RouteGuards } from './route-config.js';

async function pathgatePlugin(fastify: FastifyInstance, options: PathgateOptions): Promise<void> {
  const settings = readOptions(options);
  const guards = new RouteGuards(settings.policy);
  fastify.decorateRequest(kState, null);
  // A getter on the prototype: also null in contexts made before this
  // registration (which miss per-instance initial values), and read-only.
  fastify.decorateRequest('pathgate', {
    getter(this: FastifyRequest) {
      return stateOf(this)?.info ?? null;
    },
  });
  // Routes declared from here on compile now: a bad declaration stops startup.
  // Routes declared earlier are still guarded: the hooks below reach every
  // context, and their guards compile on first use.
  fastify.addHook('onRoute', (route) => guards.compileRoute(route));
  const { onRequest, preHandler } = createRequestHooks(settings, guards);
  fastify.addHook('onRequest', onRequest);
  fastify.addHook('preHandler', preHandler);
  fastify.addHook('onSend', createOnSend(settings));
}

/** The pathgate plugin: register it once, at the root, then declare `config.pathgate` per route. */
export const pathgate = fp(pathgatePlugin, { fastify: '5.x', name: '@pathgate/fastify' });
