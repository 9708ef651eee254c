/**
 * Tracing off loads no OpenTelemetry SDK module: the built server imported in a fresh Node process
 * (moved from test/integration/tracing.test.ts). Needs `npm run -s build`.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";

describe("off by default", () => {
  /** Imports the built server module in a fresh Node and lists the @opentelemetry modules it resolved. */
  function loadedOpenTelemetry(env: Record<string, string>): Promise<string[]> {
    const script = `
      import { registerHooks } from "node:module";
      const seen = [];
      registerHooks({ resolve(specifier, context, next) {
        if (specifier.startsWith("@opentelemetry/")) seen.push(specifier);
        return next(specifier, context);
      } });
      const { tracingFromEnv } = await import("./dist/src/platform/observability/tracing.js");
      // The whole program (main.js itself only holds stop signals and loads it on demand).
      await import("./dist/src/cli/program.js");
      const tracing = await tracingFromEnv(process.env);
      await tracing?.shutdown();
      process.stdout.write(JSON.stringify([...new Set(seen)].sort()));
    `;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
        env: { PATH: process.env.PATH ?? "", ...env },
        stdio: ["ignore", "pipe", "inherit"],
      });
      let out = "";
      child.stdout.setEncoding("utf8").on("data", (c: string) => {
        out += c;
      });
      child.once("close", (code) =>
        code === 0 ? resolve(JSON.parse(out) as string[]) : reject(new Error(`exit ${code}`)),
      );
    });
  }

  it("when off, the server loads no OpenTelemetry SDK module; when on, it does", async () => {
    // prom-client (the metrics) requires @opentelemetry/api itself, tracing or not; nothing else is loaded.
    expect(await loadedOpenTelemetry({})).toEqual(["@opentelemetry/api"]);
    const on = await loadedOpenTelemetry({ OTEL_TRACES_EXPORTER: "console" });
    expect(on).toEqual(expect.arrayContaining(["@opentelemetry/api", "@opentelemetry/sdk-trace-base"]));
  }, 20_000);
});
