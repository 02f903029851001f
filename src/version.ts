/** The bridge's version: package.json's, injected by the build (scripts/build.mjs). */
declare const __HARNESS_VERSION__: string | undefined;

export const VERSION: string = typeof __HARNESS_VERSION__ === "string" ? __HARNESS_VERSION__ : "0.0.0-dev";
