/** Proxies from the bridge's environment. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ModelError } from "../../../src/providers/types.js";
import { startRecordingProxy, type RecordingProxy } from "../../support/fake-openai-server.js";
import { collect, collectError, makeProvider, okReply, server, text, useFakeServer } from "./support.js";

useFakeServer();

describe("proxy", () => {
  let proxy: RecordingProxy;
  beforeEach(async () => {
    proxy = await startRecordingProxy();
  });
  afterEach(async () => {
    await proxy.close();
  });

  it("goes through HTTP_PROXY from the bridge's environment", async () => {
    server.enqueue(okReply());
    const parts = await collect(await makeProvider({ HTTP_PROXY: proxy.url }));
    expect(text(parts)).toBe("ok");
    // undici tunnels with CONNECT, also for http:// targets.
    expect(proxy.connects).toEqual([`127.0.0.1:${server.port}`]);
    expect(proxy.forwards).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it("honours lowercase http_proxy and NO_PROXY", async () => {
    server.enqueue(okReply(), okReply());
    await collect(await makeProvider({ http_proxy: proxy.url }));
    expect(proxy.connects.length + proxy.forwards.length).toBe(1);
    await collect(await makeProvider({ http_proxy: proxy.url, NO_PROXY: "localhost,127.0.0.1" }));
    expect(proxy.connects.length + proxy.forwards.length).toBe(1);
    expect(server.requests).toHaveLength(2);
  });

  it("fails with a network error (after retries) when the proxy is unreachable", async () => {
    const deadUrl = proxy.url;
    await proxy.close();
    proxy = await startRecordingProxy();
    const { error } = await collectError(await makeProvider({ HTTP_PROXY: deadUrl, HARNESS_MAX_RETRIES: "1" }));
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe("network");
    expect(server.requests).toHaveLength(0);
  });
});
