/** The bridge's version: package.json's, injected by the build (scripts/build.mjs). */
declare const __HARNESS_VERSION__: string | undefined;

export const VERSION: string = typeof __HARNESS_VERSION__ === "string" ? __HARNESS_VERSION__ : "0.0.0-dev";

/**
 * The Node.js this process runs on, reported as `serverInfo.runtime` (PROTOCOL.md, "Model
 * settings and sandbox status"): in the binary, the pinned Node the build embedded (package.json
 * `config.embeddedNode`, scripts/pinned-node.mjs) and the build's target. Read from the running
 * process rather than written in at build time, so it can never disagree with what runs.
 */
export function runtimeInfo(): { node: string; platform: string; arch: string } {
  return { node: process.versions.node, platform: process.platform, arch: process.arch };
}
