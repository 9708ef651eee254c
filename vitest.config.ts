import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: run two files at a time; each file has its own database.
    pool: "forks",
    maxWorkers: 2,
  },
});
