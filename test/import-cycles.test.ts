/**
 * No import circle in src/: every relative import (static, `export … from`, `import type`,
 * dynamic and `typeof import(…)`) runs one way. A circle, even of types only, means two
 * modules that cannot be read, tested or moved apart; the fix is a leaf both import (as
 * `protocol/json.ts` and `agent/store/log-format.ts` are).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(__dirname, "..", "src");
const IMPORT = /(?:^|[\n;])\s*(?:import|export)\b[^;"'`]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']|\bimport\s*["'](\.{1,2}\/[^"']+)["']|\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

/** Each .ts file under `root` and the .ts files under `root` it imports by relative path. */
function importGraph(root: string): Map<string, string[]> {
  const files = (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith(".ts")).map((f) => path.join(root, f));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = new Set<string>();
    for (const match of fs.readFileSync(file, "utf8").matchAll(IMPORT)) {
      const target = path.resolve(path.dirname(file), (match[1] ?? match[2] ?? match[3])!.replace(/\.js$/, ".ts"));
      if (target.startsWith(root + path.sep) && fs.existsSync(target)) targets.add(target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** Each strongly connected part of the graph (Tarjan): one path round it, and every file it holds. */
function circles(graph: Map<string, string[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) visit(next);
      if (stack.includes(next)) low.set(node, Math.min(low.get(node)!, low.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const part = stack.splice(stack.indexOf(node));
    if (part.length > 1 || graph.get(node)!.includes(node)) {
      const round = pathRound(graph, node, new Set(part));
      const files = part.map((file) => path.relative(SRC, file)).sort();
      found.push(`${[...round, round[0]].join(" → ")} (the circle takes in ${files.join(", ")})`);
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** A path from `start` back to it inside `part` (breadth first: the shortest). */
function pathRound(graph: Map<string, string[]>, start: string, part: Set<string>): string[] {
  const from = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const node = queue.shift()!;
    for (const next of graph.get(node) ?? []) {
      if (!part.has(next) || from.has(next)) continue;
      from.set(next, node);
      if (next === start) queue.length = 0;
      else queue.push(next);
    }
  }
  const round = [start];
  for (let node = from.get(start)!; node !== start; node = from.get(node)!) round.unshift(node);
  return [start, ...round.slice(0, -1)].map((file) => path.relative(SRC, file));
}

describe("imports in src/", () => {
  it("form no circle", () => {
    const graph = importGraph(SRC);
    expect(graph.size).toBeGreaterThan(50);
    expect(circles(graph)).toEqual([]);
  });
});
