/**
 * What a server's tool list and results become, whatever the server sends: names that fit
 * `[A-Za-z0-9_-]{1,64}` and stay apart, the caps on tool count, description and schema size,
 * and results as text (other content described, isError honoured, size capped).
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { MAX_DESCRIPTION_CHARS, MAX_SCHEMA_BYTES, MAX_SERVER_TOOL_BYTES, MAX_TOOLS_PER_SERVER, offerTools, offeredName } from "../../src/mcp/names.js";
import { MAX_RESULT_CHARS, toToolOutput } from "../../src/mcp/results.js";

const RULE = /^[A-Za-z0-9_-]{1,64}$/;
const schema = { type: "object", properties: {} };

describe("offered names", () => {
  it("keeps a name that fits, and rewrites one that does not into a valid, deterministic name", () => {
    expect(offeredName("git", "log")).toBe("mcp__git__log");
    const odd = offeredName("git", "log.show/all");
    expect(odd).toMatch(/^mcp__git__log_show_all-[0-9a-f]{8}$/);
    expect(offeredName("git", "log.show/all")).toBe(odd);
    const long = offeredName("s".repeat(32), "t".repeat(100));
    expect(long).toMatch(RULE);
    expect(long.startsWith(`mcp__${"s".repeat(32)}__`)).toBe(true);
  });

  it("every name of every valid server fits the rule, and different tool names that need rewriting never meet", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9-]{1,32}$/), fc.string({ maxLength: 200 }), fc.string({ maxLength: 200 }), (server, a, b) => {
        expect(offeredName(server, a)).toMatch(RULE);
        // A name that fits is kept, so it may equal another's rewrite: offerTools refuses those (below).
        const fits = (t: string) => t.length > 0 && RULE.test(`mcp__${server}__${t}`);
        if (a !== b && !fits(a) && !fits(b)) expect(offeredName(server, a)).not.toBe(offeredName(server, b));
      }),
    );
  });

  it("which tool an offered name runs does not depend on the list's order: a tool named like another's rewrite leaves both out, in either order", () => {
    const odd = { name: "a/b", inputSchema: schema };
    const rewritten = offeredName("s", "a/b");
    const literal = { name: rewritten.slice("mcp__s__".length), inputSchema: schema };
    expect(offeredName("s", literal.name)).toBe(rewritten); // the two really meet
    const plain = { name: "c", inputSchema: schema };
    for (const order of [[odd, literal, plain], [literal, plain, odd], [plain, odd, literal]]) {
      const { tools, leftOut, withheld } = offerTools("s", order);
      expect(tools.map((t) => [t.name, t.serverToolName])).toEqual([["mcp__s__c", "c"]]);
      // The same notes by the contested name, for the "unknown tool" error the model reads.
      expect([...withheld.keys()]).toEqual([rewritten]);
      expect(withheld.get(rewritten)!.sort()).toEqual([...leftOut].sort());
      expect(leftOut.sort()).toEqual([`'${literal.name}' (its name ${rewritten} is also the name of 'a/b'; none of them is offered)`, `'a/b' (its name ${rewritten} is also the name of '${literal.name}'; none of them is offered)`].sort());
    }
  });

  it("after tools/list_changed a name never silently runs another tool than it did", () => {
    const bound = new Map<string, string>();
    const rewritten = offeredName("s", "a/b");
    const first = offerTools("s", [{ name: "a/b", inputSchema: schema }], bound);
    expect(first.tools.map((t) => [t.name, t.serverToolName])).toEqual([[rewritten, "a/b"]]);
    // `a/b` is gone and a tool literally named like its rewrite comes: the name is not given to it.
    const literal = rewritten.slice("mcp__s__".length);
    const second = offerTools("s", [{ name: literal, inputSchema: schema }], bound);
    expect(second.tools).toEqual([]);
    expect(second.leftOut).toEqual([`'${literal}' (its name ${rewritten} ran 'a/b' before tools/list_changed; it is not given to another tool)`]);
    // `a/b` back: its name runs it again.
    expect(offerTools("s", [{ name: "a/b", inputSchema: schema }], bound).tools.map((t) => t.serverToolName)).toEqual(["a/b"]);
  });

  it("leaves out a name listed twice, a schema that is not an object or too big, and tools past the cap; cuts long descriptions", () => {
    const listed = [
      { name: "a", description: "x".repeat(MAX_DESCRIPTION_CHARS + 10), inputSchema: schema, annotations: { readOnlyHint: true } },
      { name: "dup", inputSchema: schema },
      { name: "dup", inputSchema: { type: "object", properties: { other: {} } } },
      { name: "arr", inputSchema: [] },
      { name: "big", inputSchema: { type: "object", description: "y".repeat(MAX_SCHEMA_BYTES) } },
      { name: "untyped", inputSchema: { properties: {} }, annotations: { readOnlyHint: "yes" } },
    ];
    const { tools, leftOut } = offerTools("s", listed);
    expect(tools.map((t) => t.name)).toEqual(["mcp__s__a", "mcp__s__untyped"]);
    expect(tools[0].readOnly).toBe(true);
    expect(tools[0].description.length).toBeLessThan(MAX_DESCRIPTION_CHARS + 20);
    expect(tools[0].description.endsWith("[…cut]")).toBe(true);
    // Only `readOnlyHint: true` makes a tool read-only; the model APIs get `type: "object"`.
    expect(tools[1]).toMatchObject({ readOnly: false, parameters: { type: "object", properties: {} }, description: expect.stringContaining("untyped") });
    // Neither copy of a name listed twice: which one ran would depend on the list's order.
    expect(leftOut).toEqual([expect.stringContaining("'dup' (listed 2 times"), expect.stringContaining("'arr'"), expect.stringContaining("'big'")]);
    const many = offerTools("s", Array.from({ length: MAX_TOOLS_PER_SERVER + 5 }, (_, i) => ({ name: `t${i}`, inputSchema: schema })));
    expect(many.tools).toHaveLength(MAX_TOOLS_PER_SERVER);
    expect(many.leftOut).toEqual([`5 tools past the first ${MAX_TOOLS_PER_SERVER}`]);
  });
});

describe("a hostile tool list", () => {
  it("a name listed 20 000 times is one note, the model's explanation stays short, and the other tools are offered", () => {
    const copies = 20_000;
    const listed = [{ name: "first", inputSchema: schema }, ...Array.from({ length: copies }, () => ({ name: "dup", inputSchema: schema })), { name: "last", inputSchema: schema }];
    const { tools, leftOut, withheld } = offerTools("s", listed);
    expect(tools.map((t) => t.name)).toEqual(["mcp__s__first", "mcp__s__last"]);
    expect(leftOut).toEqual([`'dup' (listed ${copies} times; no copy is offered)`]);
    expect(withheld.get("mcp__s__dup")).toEqual(leftOut);
  });

  it("128 tools each at the caps of description and schema: what every model request would carry stays within the server's budget; the rest are left out, saying why", () => {
    const big = { type: "object", properties: { x: { type: "string", description: "y".repeat(MAX_SCHEMA_BYTES - 200) } } };
    const listed = Array.from({ length: MAX_TOOLS_PER_SERVER }, (_, i) => ({ name: `t${i}`, description: "d".repeat(MAX_DESCRIPTION_CHARS), inputSchema: big }));
    const { tools, leftOut } = offerTools("s", [{ name: "small", inputSchema: schema }, ...listed]);
    const carried = tools.reduce((sum, t) => sum + Buffer.byteLength(JSON.stringify(t.parameters)) + Buffer.byteLength(t.description), 0);
    expect(carried).toBeLessThanOrEqual(MAX_SERVER_TOOL_BYTES + tools.length * 20);
    expect(tools.length).toBeGreaterThan(1);
    expect(tools[0]!.name).toBe("mcp__s__small");
    expect(leftOut).toHaveLength(MAX_TOOLS_PER_SERVER + 1 - tools.length);
    expect(leftOut[0]).toMatch(/^'t\d+' \(the server's tools offered before it hold \d+ bytes of descriptions and schemas; with its \d+ they would pass 262144\)$/);
  });

  it("the count of tools past the cap is of tools not yet named: neither the ones left out before it nor the copies of one name", () => {
    const good = (i: number) => ({ name: `t${i}`, inputSchema: schema });
    const listed = [
      ...Array.from({ length: 10 }, (_, i) => ({ name: `bad${i}`, inputSchema: [] })),
      ...Array.from({ length: 1000 }, () => ({ name: "dup", inputSchema: schema })),
      ...Array.from({ length: MAX_TOOLS_PER_SERVER + 3 }, (_, i) => good(i)),
      ...Array.from({ length: 50 }, () => good(MAX_TOOLS_PER_SERVER + 3)),
    ];
    const { tools, leftOut } = offerTools("s", listed);
    expect(tools).toHaveLength(MAX_TOOLS_PER_SERVER);
    // 10 bad schemas and 'dup' named one by one; t128, t129, t130 and t131 (listed 50 times) past the cap.
    expect(leftOut).toHaveLength(12);
    expect(leftOut.at(-1)).toBe(`4 tools past the first ${MAX_TOOLS_PER_SERVER}`);
  });

  it("a contested name listed many times by each claimant: one note per claimant, quoting the others", () => {
    const rewritten = offeredName("s", "a/b");
    const listed = [...Array.from({ length: 1000 }, () => ({ name: "a/b", inputSchema: schema })), ...Array.from({ length: 1000 }, () => ({ name: rewritten.slice("mcp__s__".length), inputSchema: schema }))];
    const { tools, leftOut } = offerTools("s", listed);
    expect(tools).toEqual([]);
    expect(leftOut).toHaveLength(2);
    expect(leftOut[0]).toContain("and it is listed 1000 times");
  });
});

describe("results", () => {
  it("keeps text, describes every other content type, honours isError", () => {
    const out = toToolOutput({
      isError: true,
      content: [
        { type: "text", text: "first" },
        { type: "image", mimeType: "image/png", data: "AAAA" },
        { type: "audio", mimeType: "audio/wav", data: "AAAAAA==" },
        { type: "resource_link", uri: "file:///a", name: "a" },
        { type: "resource", resource: { uri: "file:///b", mimeType: "text/plain", text: "inside" } },
        { type: "resource", resource: { uri: "file:///c", blob: "AAAA" } },
        { type: "hologram" },
        42,
      ],
    });
    expect(out.isError).toBe(true);
    expect(out.content).toEqual([
      {
        type: "text",
        text: [
          "first",
          "[image: image/png, 3 bytes, not shown]",
          "[audio: audio/wav, 4 bytes, not shown]",
          '[resource link: file:///a "a"]',
          "[resource file:///b (text/plain)]\ninside",
          "[resource file:///c: binary, 3 bytes, not shown]",
          '[content of type "hologram", not shown]',
          "[malformed content item]",
        ].join("\n"),
      },
    ]);
  });

  it("shows structured content without content, says when there is nothing, and caps the size", () => {
    expect(toToolOutput({ content: [], structuredContent: { n: 1 } }).content[0].text).toBe('{"n":1}');
    expect(toToolOutput({ content: "not a list" })).toEqual({ content: [{ type: "text", text: "(no output)" }], isError: false });
    expect(toToolOutput({ isError: true }).content[0].text).toBe("(the tool failed without a message)");
    const huge = toToolOutput({ content: [{ type: "text", text: "z".repeat(MAX_RESULT_CHARS * 2) }] }).content[0].text;
    expect(huge.length).toBeLessThan(MAX_RESULT_CHARS + 100);
    expect(huge).toContain(`${MAX_RESULT_CHARS} characters of the result cut`);
  });
});
