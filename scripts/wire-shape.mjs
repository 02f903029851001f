#!/usr/bin/env node
/**
 * The wire's shape as the TypeScript types in src/protocol/ declare it: every session event type
 * with the field paths of its data, every notification and every request method with the field
 * paths of its params and result. test/fixtures/wire-shape.json holds it; test/protocol/wire-shape.test.ts
 * checks that file against these types, python/sdk/tests/test_wire_shape.py against the SDK's
 * models, so a field added on one side only fails a test.
 *
 *   node scripts/wire-shape.mjs            print the shape
 *   node scripts/wire-shape.mjs --write    rewrite test/fixtures/wire-shape.json
 *
 * A path is a field's wire name, nested fields as `a.b`, an array's elements as `a[].b`. A union
 * of object types contributes the fields of every member (a turn end reason's `limit` and
 * `httpStatus` both sit under `reason`). What the shape does not follow: `Record<string, …>` maps
 * and JSON values (`JsonObject`, `JsonValue`: opaque on both sides), and `SessionEvent` inside
 * params and results (its shape is `events` and `eventEnvelope`).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const FIXTURE = join(root, "test/fixtures/wire-shape.json");
const INDEX = join(root, "src/protocol/index.ts");

/** Types whose inside the shape does not follow (see the module comment). */
const OPAQUE = new Set(["JsonValue", "JsonObject", "SessionEvent", "TurnOutput"]);

function sorted(set) {
  return [...set].sort();
}

/** The field paths of `type` under `prefix`, added to `out`. */
function collect(checker, type, prefix, out, stack) {
  if (type.aliasSymbol && OPAQUE.has(type.aliasSymbol.name)) return;
  if (stack.has(type)) return;
  stack.add(type);
  try {
    if (type.isUnion()) {
      for (const member of type.types) collect(checker, member, prefix, out, stack);
      return;
    }
    if (checker.isArrayType(type)) {
      collect(checker, checker.getTypeArguments(type)[0], `${prefix}[]`, out, stack);
      return;
    }
    if (!(type.flags & ts.TypeFlags.Object)) return;
    const props = checker.getPropertiesOfType(type);
    for (const prop of props) {
      const path = prefix ? `${prefix}.${prop.name}` : prop.name;
      out.add(path);
      const decl = prop.valueDeclaration ?? prop.declarations?.[0];
      const propType = decl ? checker.getTypeOfSymbolAtLocation(prop, decl) : checker.getTypeOfSymbol(prop);
      collect(checker, checker.getNonNullableType(propType), path, out, stack);
    }
  } finally {
    stack.delete(type);
  }
}

function pathsOf(checker, type) {
  const out = new Set();
  collect(checker, checker.getNonNullableType(type), "", out, new Set());
  return sorted(out);
}

/** The shape, computed from src/protocol/ with the TypeScript compiler. */
export function wireShape() {
  const program = ts.createProgram([INDEX], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(INDEX));
  const exported = new Map(checker.getExportsOfModule(moduleSymbol).map((s) => [s.name, s]));
  const typeNamed = (name) => {
    const symbol = exported.get(name);
    if (!symbol) throw new Error(`src/protocol/index.ts exports no ${name}`);
    return checker.getDeclaredTypeOfSymbol(symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol);
  };
  const member = (type, name) => {
    const prop = checker.getPropertyOfType(type, name);
    return checker.getTypeOfSymbol(prop);
  };

  const events = {};
  for (const prop of checker.getPropertiesOfType(typeNamed("SessionEventDataMap"))) {
    events[prop.name] = pathsOf(checker, checker.getTypeOfSymbol(prop));
  }

  const envelope = new Set();
  for (const variant of typeNamed("SessionEvent").types) {
    for (const prop of checker.getPropertiesOfType(variant)) envelope.add(prop.name);
  }

  const notifications = {};
  for (const prop of checker.getPropertiesOfType(typeNamed("NotificationMap"))) {
    notifications[prop.name] = pathsOf(checker, checker.getTypeOfSymbol(prop));
  }

  const methods = {};
  for (const prop of checker.getPropertiesOfType(typeNamed("RequestMap"))) {
    const entry = checker.getTypeOfSymbol(prop);
    methods[prop.name] = { params: pathsOf(checker, member(entry, "params")), result: pathsOf(checker, member(entry, "result")) };
  }

  const byKey = (o) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { events: byKey(events), eventEnvelope: sorted(envelope), notifications: byKey(notifications), methods: byKey(methods) };
}

/** The fixture's text for `shape`: what --write writes and the test compares. */
export function fixtureText(shape) {
  return `${JSON.stringify(shape, null, 2)}\n`;
}

export function readFixture() {
  return JSON.parse(readFileSync(FIXTURE, "utf8"));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = fixtureText(wireShape());
  if (process.argv.includes("--write")) writeFileSync(FIXTURE, text);
  else process.stdout.write(text);
}
