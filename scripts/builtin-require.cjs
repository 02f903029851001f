// The `require` the single executable gives a bundle: built-in modules only. The build's cache
// runs (chunk-cache.cjs, start-up-cache.cjs) hand this one to what they evaluate, so a bundle
// that asks for anything else fails at build time as it would in the executable.
"use strict";
const { builtinModules } = require("node:module");

const builtins = new Set(builtinModules);
module.exports = function builtinRequire(id) {
  if (!builtins.has(id.replace(/^node:/, "")) && !id.startsWith("node:")) throw new Error(`the bundle requires ${JSON.stringify(id)}, which the single executable cannot load`);
  return require(id);
};
