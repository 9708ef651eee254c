/**
 * The rules pass Prometheus's own checks (issue 51): `promtool check rules` reads every rule of
 * deploy/monitoring/topwagers.rules.yaml, `promtool check config` the example Prometheus configuration with it, and
 * `promtool test rules` runs the unit tests of deploy/monitoring/tests/, which make every alert fire (and stay
 * quiet when healthy) at the minute its `for:` says, with the labels and annotations an on-call engineer reads.
 * promtool is Debian's (the `prometheus` package, installed by .ci/run).
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { RULES_FILE, rules, ruleTestFiles } from "../support/monitoring.js";

const PROMTOOL = "/usr/bin/promtool";

function promtool(...args: string[]): { status: number | null; output: string } {
  const run = spawnSync(PROMTOOL, args, { encoding: "utf8", timeout: 60_000 });
  if (run.error !== undefined) throw new Error(`${PROMTOOL} did not run (apt-get install prometheus): ${run.error}`);
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe("promtool", () => {
  it("check rules: every rule of the rule file is valid", () => {
    const { status, output } = promtool("check", "rules", RULES_FILE);
    expect({ status, output }).toEqual({
      status: 0,
      output: `Checking ${RULES_FILE}\n  SUCCESS: ${rules().length} rules found\n\n`,
    });
  });

  it("check config: the example configuration and the rules it loads", () => {
    const { status, output } = promtool("check", "config", "deploy/monitoring/prometheus.example.yaml");
    expect(status, output).toBe(0);
    expect(output).toContain(`SUCCESS: ${rules().length} rules found`);
  });

  it("test rules: every unit test passes", () => {
    const files = ruleTestFiles();
    expect(files.length).toBe(3);
    const { status, output } = promtool("test", "rules", ...files);
    expect(status, output).toBe(0);
    expect(output.match(/^ {2}SUCCESS$/gm)?.length, output).toBe(files.length);
  });
});
