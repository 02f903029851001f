/**
 * Where the runtime's notifications go: frames on the endpoint. A session event the session
 * encoded whole (session.ts) is spliced into its frame, the same bytes as the object
 * `{sessionId, event}` encoded, without encoding the event a second time.
 */
import type { RuntimeSink } from "../agent/runtime.js";
import type { SessionEvent, SubagentFinishedNotification, SubagentStartedNotification } from "../protocol/types.js";
import type { ServerEndpoint } from "../transport/server-endpoint.js";

export function runtimeSink(endpoint: ServerEndpoint): RuntimeSink {
  // The params' text before the event, for the last session id seen: a turn's events all name
  // the same session (the same string, which the endpoint's line head is kept for).
  let lastId: string | undefined;
  let lastHead = "";
  return {
    sessionEvent: (sessionId: string, event: SessionEvent, json?: string) => {
      if (json === undefined) return endpoint.notify("session.event", { sessionId, event });
      if (sessionId !== lastId) {
        lastId = sessionId;
        lastHead = `{"sessionId":${JSON.stringify(sessionId)},"event":`;
      }
      return endpoint.notifyJson("session.event", lastHead, json);
    },
    subagentStarted: (params: SubagentStartedNotification) => endpoint.notify("subagent.started", params),
    subagentFinished: (params: SubagentFinishedNotification) => endpoint.notify("subagent.finished", params),
  };
}
