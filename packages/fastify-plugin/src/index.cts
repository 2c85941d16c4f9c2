// What require('@pathgate/fastify') returns: the plugin itself, as Fastify's
// own plugins are, with the ES module's exports on it (`default` and
// `pathgate` are the plugin too). Typed by index.d.cts.
import api = require('./index.js');

export = Object.assign(api.pathgate, api);
