/**
 * node:http as `require` gives it. An ES import of node:http makes Node read every one of its exports
 * once, and some of them are getters that load Node's own copy of undici (for `WebSocket` and the like):
 * tens of milliseconds of a start that nothing here uses. The module is the same object either way.
 */
export const nodeHttp = process.getBuiltinModule('node:http');
