// The types of the CommonJS build (index.cts): the plugin, with the ES
// module's exports on it, for `import pathgate = require('@pathgate/fastify')`.
// Written by hand, as the types bundler turns `export =` into a default
// export; the build puts it in dist beside api.d.cts, the exports' types as
// CommonJS reads them (its @pathgate/core is the app's require() of it).
import type * as Api from './api.cjs';

declare const pathgate: typeof Api.pathgate & typeof Api;
// The ES module's type exports (its values are on the plugin's type above).
declare namespace pathgate {
  export type CheckedFile = Api.CheckedFile;
  export type DenyHandler = Api.DenyHandler;
  export type GuardDenyReason = Api.GuardDenyReason;
  export type PathDenial = Api.PathDenial;
  export type PathSpec = Api.PathSpec;
  export type PathgateDenied = Api.PathgateDenied;
  export type PathgateDeniedError = Api.PathgateDeniedError;
  export type PathgateInfo = Api.PathgateInfo;
  export type PathgateOptions = Api.PathgateOptions;
  export type PathgatePolicyOptions = Api.PathgatePolicyOptions;
  export type PathgateRouteConfig = Api.PathgateRouteConfig;
  export type PathgateRuleOptions = Api.PathgateRuleOptions;
  export type RouteGuardOptions = Api.RouteGuardOptions;
}
export = pathgate;
