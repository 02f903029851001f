// The agent chunk's modules shared with the main bundle (src/server/agent-modules.ts), for
// scripts/build.mjs. The agent chunk (src/server/agent-chunk.ts) is built after the main bundle:
// each module it imports that the main bundle already holds stays out of it, as the external
// `harness-main:<source path>`, and the main bundle is built again with
// src/server/shared-modules.ts filled in: one dynamic `import()` per such module, so the chunk
// gets the main bundle's own instance of each (one copy of every class and of every module's
// state), and a module the start-up path does not evaluate is still not evaluated at start-up.
import * as fs from "node:fs";
import * as path from "node:path";

const SHARED_FILE = path.join("src", "server", "shared-modules.ts");

/** The source path (relative to `root`) that a relative import `specifier` from `resolveDir` names, if it is a .ts file. */
function sourceOf(root, resolveDir, specifier) {
  if (!specifier.startsWith(".")) return undefined;
  const file = path.resolve(resolveDir, specifier.replace(/\.js$/, ".ts"));
  return fs.existsSync(file) ? path.relative(root, file) : undefined;
}

/**
 * For the agent chunk's build: every relative import of a module in `mainInputs` (the main
 * bundle's source paths) becomes the external `harness-main:<path>`; the paths are added to
 * `shared` as they are met.
 */
export function importsFromMain(root, mainInputs, prefix, shared) {
  return {
    name: "imports-from-main",
    setup(build) {
      build.onResolve({ filter: /^\./ }, (args) => {
        const source = sourceOf(root, args.resolveDir, args.path);
        if (source === undefined || !mainInputs.has(source)) return undefined;
        shared.add(source);
        return { path: `${prefix}${source}`, external: true };
      });
    },
  };
}

/**
 * What src/server/shared-modules.ts lists for the main bundle: for each module in `shared`, how
 * the agent chunk gets the main bundle's instance. A module the start-up path evaluates anyway
 * (reached from src/main.ts by static imports, per the main build's metafile `main`) is imported
 * by name, and its object made only when asked for: getters, so a binding the module reassigns
 * reads as it is now. Any other is a dynamic `import()`, which leaves it as lazy as it was
 * (esbuild would otherwise make a namespace object of every shared module at start-up, and wrap
 * each in a deferred init, which costs every start more than the chunk saves).
 */
async function registry(esbuild, root, shared, main) {
  const inputs = main.metafile.inputs;
  const eager = new Set();
  const visit = (source) => {
    if (eager.has(source) || !inputs[source]) return;
    eager.add(source);
    for (const edge of inputs[source].imports) if (edge.kind === "import-statement" && !edge.external) visit(edge.path);
  };
  visit(path.join("src", "main.ts"));
  const imports = [];
  const entries = [];
  for (const [i, source] of [...shared].sort().entries()) {
    const file = JSON.stringify(path.join(root, source));
    if (!eager.has(source)) {
      entries.push(`  ${JSON.stringify(source)}: () => import(${file}),`);
      continue;
    }
    // The module's value exports, `export *` included: a bundle of it alone lists them.
    const alone = await esbuild.build({ entryPoints: [path.join(root, source)], bundle: true, packages: "external", platform: "node", format: "esm", write: false, metafile: true, outdir: "out", logLevel: "silent" });
    const names = Object.values(alone.metafile.outputs).flatMap((output) => output.exports ?? []);
    imports.push(`import { ${names.map((name) => `${name} as s${i}_${name}`).join(", ")} } from ${file};`);
    entries.push(`  ${JSON.stringify(source)}: () => Promise.resolve({ ${names.map((name) => `get ${name}() { return s${i}_${name}; }`).join(", ")} }),`);
  }
  return { imports, entries };
}

/** For the main bundle's build: src/server/shared-modules.ts with `SHARED_MODULES` listing `shared` (see `registry`). */
export function sharedModulesFilled(esbuild, root, shared, main) {
  const file = path.join(root, SHARED_FILE);
  return {
    name: "shared-modules-filled",
    setup(build) {
      build.onLoad({ filter: /[\\/]src[\\/]server[\\/]shared-modules\.ts$/ }, async (args) => {
        if (args.path !== file || shared.size === 0) return undefined;
        const source = fs.readFileSync(file, "utf8");
        const empty = "export const SHARED_MODULES: Record<string, () => Promise<unknown>> = {};";
        if (!source.includes(empty)) throw new Error(`${SHARED_FILE} no longer declares ${empty}`);
        const { imports, entries } = await registry(esbuild, root, shared, main);
        const filled = `${imports.join("\n")}\nexport const SHARED_MODULES: Record<string, () => Promise<unknown>> = {\n${entries.join("\n")}\n};`;
        return { contents: source.replace(empty, filled), loader: "ts" };
      });
    },
  };
}

/** The prefix as src/server/shared-modules.ts declares it. */
export function sharedPrefix(root) {
  const match = /export const SHARED_PREFIX = "([^"]+)";/.exec(fs.readFileSync(path.join(root, SHARED_FILE), "utf8"));
  if (!match) throw new Error(`${SHARED_FILE} no longer declares SHARED_PREFIX`);
  return match[1];
}
