/**
 * Settings (issue 20, item 5): every problem of the environment is listed in one pass, OpenTelemetry's
 * OTEL_TRACES_EXPORTER included, so an operator fixes them all before the next start. No database.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/platform/config.js";
import { problemsOf } from "../support/config-problems.js";

describe("settings errors", () => {
  it("PORT=80a RATE_LIMIT_POINTS=0 OTEL_TRACES_EXPORTER=jaeger lists all three problems", () => {
    expect(problemsOf({ PORT: "80a", RATE_LIMIT_POINTS: "0", OTEL_TRACES_EXPORTER: "jaeger" })).toEqual([
      'OTEL_TRACES_EXPORTER must be none, otlp or console, got "jaeger"',
      'PORT must be a whole number from 0 to 65535, got "80a"',
      'RATE_LIMIT_POINTS must be a whole number from 1 to 1000000000, got "0"',
    ]);
  });

  it("the message lists each problem on its own line", () => {
    expect(() => loadConfig({ OTEL_TRACES_EXPORTER: "jaeger", LOG_LEVEL: "loud" })).toThrow(
      'invalid configuration:\n  - LOG_LEVEL must be one of debug, info, warn, error, silent, got "loud"\n' +
        '  - OTEL_TRACES_EXPORTER must be none, otlp or console, got "jaeger"',
    );
  });

  it("the traces exporter is part of the settings", () => {
    expect(loadConfig({}).tracesExporter).toBe("none");
    expect(loadConfig({ OTEL_TRACES_EXPORTER: "OTLP" }).tracesExporter).toBe("otlp");
    expect(loadConfig({ OTEL_TRACES_EXPORTER: "console", OTEL_SDK_DISABLED: "true" }).tracesExporter).toBe("none");
  });
});
