import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Builds bin/harness-bridge when it is missing or older than src/ (the end-to-end tests run it).
    globalSetup: ["test/support/build-once.ts"],
    // Every bridge a test starts keeps its session logs in a temporary folder, not in $HOME.
    setupFiles: ["test/support/isolate-state.ts"],
    // The end-to-end tests spawn the built binary; two cores are all CI has.
    pool: "forks",
    maxWorkers: 2,
  },
});
