/** OTEL_TRACES_EXPORTER: tracing is off unless asked for (moved from test/integration/tracing.test.ts). */
import { describe, expect, it } from "vitest";
import { tracesExporterName } from "../../src/platform/observability/tracing.js";

describe("off by default", () => {
  it("OTEL_TRACES_EXPORTER unset or none is off; an unknown value is a settings error", () => {
    expect(tracesExporterName({})).toBe("none");
    expect(tracesExporterName({ OTEL_TRACES_EXPORTER: "none" })).toBe("none");
    expect(tracesExporterName({ OTEL_TRACES_EXPORTER: "otlp", OTEL_SDK_DISABLED: "true" })).toBe("none");
    expect(tracesExporterName({ OTEL_TRACES_EXPORTER: "otlp" })).toBe("otlp");
    expect(() => tracesExporterName({ OTEL_TRACES_EXPORTER: "jaeger" })).toThrow(
      'OTEL_TRACES_EXPORTER must be none, otlp or console, got "jaeger"',
    );
  });
});
