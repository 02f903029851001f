/**
 * The event stream of a response body: bytes decoded as UTF-8 (a character cut between two reads
 * is kept whole), parsed as SSE by eventsource-parser, handed out as the trimmed `data` of each
 * event. Comments (`: keep-alive`), empty data and malformed lines yield nothing; a line longer
 * than {@link MAX_SSE_BUFFER_CHARS} fails the attempt (it is not retried: the server sent it).
 *
 * @module
 */
import type { EventSourceMessage, createParser as CreateParser } from "eventsource-parser";
import { ModelError } from "../types.js";
import { AttemptFailure } from "./retry.js";
import type { ProviderLog } from "./settings.js";

/** The longest SSE line kept while it is incomplete. */
export const MAX_SSE_BUFFER_CHARS = 16 * 1024 * 1024;

/**
 * Yields the data of each event of `reader`'s bytes. `beforeRead` runs before every read and
 * `afterRead` once it returned (the caller's idle timer runs between the two: the time its
 * consumer holds the stream, a client slow to read stdout, is not the server's silence). A read
 * error propagates as thrown by the body stream.
 */
export async function* readEventData(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  createParser: typeof CreateParser,
  beforeRead: () => void,
  afterRead: () => void,
  log: ProviderLog,
): AsyncGenerator<string> {
  const events: EventSourceMessage[] = [];
  let parseError: Error | undefined;
  const parser = createParser({
    onEvent: (event) => events.push(event),
    onError: (err) => {
      if (err.type === "max-buffer-size-exceeded") parseError = err;
      else log("debug", () => `ignored a malformed SSE line: ${err.message}`);
    },
    maxBufferSize: MAX_SSE_BUFFER_CHARS,
  });
  const decoder = new TextDecoder("utf-8");
  for (;;) {
    beforeRead();
    const chunk = await reader.read();
    afterRead();
    if (chunk.done) {
      parser.feed(decoder.decode());
      parser.reset({ consume: true });
    } else {
      parser.feed(decoder.decode(chunk.value, { stream: true }));
    }
    if (parseError) {
      throw new AttemptFailure(new ModelError(`the event stream is malformed: ${parseError.message}`, undefined, "stream"), false);
    }
    while (events.length > 0) {
      const data = events.shift()!.data.trim();
      if (data !== "") yield data;
    }
    if (chunk.done) return;
  }
}
