import { readdirSync } from "node:fs";
import { defineConfig } from "vitest/config";

const TIERS = ["unit", "integration", "e2e"] as const;

// A test file outside the three tier folders would belong to no project and never run: refuse to start instead.
const untiered = readdirSync("test", { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".test.ts"))
  .filter((file) => !TIERS.some((tier) => file.startsWith(`${tier}/`)));
if (untiered.length > 0) {
  throw new Error(`test files must live in test/unit, test/integration or test/e2e: ${untiered.join(", ")}`);
}

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
      // The real service in this process over a throwaway MariaDB database.
      { extends: true, test: { name: "integration", include: ["test/integration/**/*.test.ts"] } },
      // Spawned processes: the built server and CLI, extra MariaDB and Redis servers, a browser, containers, soak.
      { extends: true, test: { name: "e2e", include: ["test/e2e/**/*.test.ts"] } },
    ],
  },
});
