import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: run two files at a time; each file has its own database.
    pool: "forks",
    maxWorkers: 2,
    // Three tiers, each its own project (`vitest run --project unit`); `vitest run` runs all three.
    projects: [
      // Pure logic: no database, no Redis, no spawned process.
      { extends: true, test: { name: "unit", include: ["test/unit/**/*.test.ts"] } },
      // The real service in this process over a throwaway MariaDB database (and Redis where a test says so).
      { extends: true, test: { name: "integration", include: ["test/integration/**/*.test.ts"] } },
      // Spawned processes: the built server and CLI, extra MariaDB and Redis servers, a browser, containers, soak.
      { extends: true, test: { name: "e2e", include: ["test/e2e/**/*.test.ts"] } },
    ],
  },
});
