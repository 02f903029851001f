/**
 * Through the built binary: a script with a key the format does not know (`toolcalls` for
 * `toolCalls`) is refused at `initialize` with -32004, like the script's other mistakes (invalid
 * JSON, empty `turns`), naming the key, where it is and the key it likely meant. It used to run
 * `ok` with no tool call: a user's test that passed while testing nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RawClient, initParams } from "../support/raw-client.js";
import { tempWorkspace, type TempWorkspace } from "../support/scripts.js";

let ws: TempWorkspace;
let client: RawClient | undefined;

beforeEach(() => {
  ws = tempWorkspace("hb-e2e-keys-");
});

afterEach(async () => {
  await client?.dispose();
  ws.cleanup();
});

describe("a script with an unknown key", () => {
  it("is refused at initialize, naming the key, its place and the known key, and the bridge goes on serving", async () => {
    ws.file("typo.json", JSON.stringify({ steps: [{ text: "hi", toolcalls: [{ name: "read_file", arguments: { path: "a" } }] }] }));
    ws.file("good.json", JSON.stringify({ steps: [{ text: "hi" }] }));
    client = new RawClient();
    client.request("bad", "initialize", initParams(ws.dir, "typo.json"));
    const { error } = await client.response("bad");
    expect(error?.code).toBe(-32004);
    expect(error?.message).toContain(`scripted model 'typo.json': turns[0].steps[0] has an unknown key "toolcalls" (did you mean 'toolCalls'?)`);
    client.request("good", "initialize", initParams(ws.dir, "good.json"));
    expect((await client.response("good")).error).toBeUndefined();
  });
});
