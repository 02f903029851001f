// The ACP peer of the round-trip benchmark: an agent on the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, stdio NDJSON) whose `session/prompt` does what a one-chunk
// scripted turn does at the least: it streams one `session/update` (an agent_message_chunk
// echoing the prompt's text), then answers `end_turn`. bench/sections/peers.py drives it with
// the same raw Python reader/writer as the bridge and the other peers.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

let sessions = 0;
const app = acp
  .agent({ name: "bench-acp" })
  .onRequest(acp.methods.agent.initialize, () => ({ protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: {} }))
  .onRequest(acp.methods.agent.session.new, () => ({ sessionId: `s${++sessions}` }))
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const block = params.prompt[0];
    const text = block && block.type === "text" ? block.text : "";
    await client.notify(acp.methods.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
    });
    return { stopReason: "end_turn" };
  });
const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
