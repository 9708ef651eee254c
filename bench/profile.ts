/**
 * `npm run bench -- profile <file.cpuprofile> [--top 25]`: self time by
 * function from a V8 CPU profile (node --cpu-prof), heaviest first, with the
 * share of busy time (idle and program excluded) — where the time goes.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { table } from "./support.js";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export async function runProfileSummary(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { top: { type: "string", default: "25" } },
  });
  const file = positionals[0];
  if (file === undefined) throw new Error("usage: npm run bench -- profile <file.cpuprofile> [--top 25]");
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMicros = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (const [i, id] of profile.samples.entries()) {
    const node = byId.get(id);
    const micros = profile.timeDeltas[i] ?? 0;
    if (node === undefined) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === "(idle)" || functionName === "(program)") {
      idle += micros;
      continue;
    }
    busy += micros;
    const where =
      url === ""
        ? ""
        : ` ${url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*\/dist\//, "dist/")}:${lineNumber + 1}`;
    const name = `${functionName === "" ? "(anonymous)" : functionName}${where}`;
    selfMicros.set(name, (selfMicros.get(name) ?? 0) + micros);
  }
  const top = [...selfMicros.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
  process.stdout.write(
    [
      "",
      `profile: ${file}`,
      `busy ${(busy / 1e6).toFixed(2)} s, idle/program ${(idle / 1e6).toFixed(2)} s`,
      "",
      table(
        ["function (self time)", "ms", "% of busy"],
        top.map(([name, micros]) => [name, (micros / 1000).toFixed(0), ((100 * micros) / busy).toFixed(1)]),
      ),
      "",
    ].join("\n"),
  );
}
