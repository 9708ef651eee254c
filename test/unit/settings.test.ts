/**
 * Settings (issue 20, item 5): every problem of the environment is listed in one pass, OpenTelemetry's
 * OTEL_TRACES_EXPORTER included, so an operator fixes them all before the next start. SIGNING (issue 46 part 4): on
 * by default, off turns signing off, anything else and off beside SIGNING_KEY_FILE are problems. No database.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

describe("SIGNING", () => {
  it("is on by default and off when asked, in any case", () => {
    expect([
      loadConfig({}).signing,
      loadConfig({ SIGNING: "off" }).signing,
      loadConfig({ SIGNING: "OFF" }).signing,
    ]).toEqual(["on", "off", "off"]);
  });

  it("is on or off, and off beside SIGNING_KEY_FILE is a problem", () => {
    const file = join(mkdtempSync(join(tmpdir(), "topwagers-signing-")), "key.pem");
    writeFileSync(file, generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }).toString());
    expect(problemsOf({ SIGNING: "no" })).toEqual(['SIGNING must be on or off, got "no"']);
    expect(problemsOf({ SIGNING: "off", SIGNING_KEY_FILE: file })).toEqual([
      "SIGNING=off and SIGNING_KEY_FILE cannot both be set: unset one (SIGNING=off signs nothing)",
    ]);
    expect(loadConfig({ SIGNING: "on", SIGNING_KEY_FILE: file }).signing).toBe("on");
  });
});
