/**
 * `npm run bench -- profile <file.cpuprofile> [--top 25] [--own dist/src/]`:
 * self time by function from a V8 CPU profile (node --cpu-prof), heaviest
 * first, with the share of busy time (idle and program excluded) — where the
 * time goes; then the inclusive time of our own functions (those whose file
 * contains `--own`): the share of busy samples with the function anywhere on
 * the stack, counted once per sample. For an async function that is the part
 * up to its first await.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { table } from "./support.js";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
  readonly children?: readonly number[];
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
    options: { top: { type: "string", default: "25" }, own: { type: "string", default: "dist/src/" } },
  });
  const file = positionals[0];
  if (file === undefined)
    throw new Error("usage: npm run bench -- profile <file.cpuprofile> [--top 25] [--own dist/src/]");
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const nameOf = (node: ProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const where =
      url === ""
        ? ""
        : ` ${url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*\/dist\//, "dist/")}:${lineNumber + 1}`;
    return `${functionName === "" ? "(anonymous)" : functionName}${where}`;
  };
  const selfMicros = new Map<string, number>();
  const ownInclusive = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (const [i, id] of profile.samples.entries()) {
    const node = byId.get(id);
    const micros = profile.timeDeltas[i] ?? 0;
    if (node === undefined) continue;
    const { functionName } = node.callFrame;
    if (functionName === "(idle)" || functionName === "(program)") {
      idle += micros;
      continue;
    }
    busy += micros;
    const name = nameOf(node);
    selfMicros.set(name, (selfMicros.get(name) ?? 0) + micros);
    const onStack = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const frame = byId.get(at);
      if (frame === undefined || !frame.callFrame.url.includes(values.own)) continue;
      onStack.add(nameOf(frame));
    }
    for (const own of onStack) ownInclusive.set(own, (ownInclusive.get(own) ?? 0) + micros);
  }
  const heaviest = (times: Map<string, number>) =>
    [...times.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
  const rows = (times: Map<string, number>) =>
    heaviest(times).map(([name, micros]) => [name, (micros / 1000).toFixed(0), ((100 * micros) / busy).toFixed(1)]);
  process.stdout.write(
    [
      "",
      `profile: ${file}`,
      `busy ${(busy / 1e6).toFixed(2)} s, idle/program ${(idle / 1e6).toFixed(2)} s`,
      "",
      table(["function (self time)", "ms", "% of busy"], rows(selfMicros)),
      "",
      table([`own function, ${values.own} (inclusive)`, "ms", "% of busy"], rows(ownInclusive)),
      "",
    ].join("\n"),
  );
}
