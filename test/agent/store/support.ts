/** What the session log tests open and write: a new session's header, and a user message event. */
import type { NewSessionHeader } from "../../../src/agent/store/index.js";
import type { SessionEvent } from "../../../src/protocol/index.js";

export const header: NewSessionHeader = { provider: "scripted", model: "demo" };

/** A `user/message` of `text`, numbered `seq`. */
export const userMessage = (seq: number, text = "x"): SessionEvent => ({ type: "user/message", seq, time: 1, data: { id: `u${seq}`, content: [{ type: "text", text }] } }) as SessionEvent;
