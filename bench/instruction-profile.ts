/**
 * `npm run bench -- instruction-profile <callgrind dump> [--map FILE] [--requests N] [--top 30] [--match TEXT]`:
 * where the instructions of a callgrind dump (bench/instructions.ts) went, by
 * function, with JavaScript functions named. Callgrind knows the machine code
 * of Node and its libraries by symbol, but JIT-compiled JavaScript only by
 * address; a server started with `node --perf-basic-prof` writes the address
 * ranges of its compiled functions to /tmp/perf-<pid>.map, which names them
 * here (the newest range holding the address wins: code space is reused, so
 * the map must be the one written up to the dump: bench protocols keeps a
 * copy beside each dump, <dump>.map, read by default).
 *
 * Prints, per request when --requests is given: instructions by group (our
 * code, each library, Node's JavaScript, V8's garbage collector, compiler,
 * runtime and builtins, native libraries), the heaviest functions by self
 * count, and the heaviest JavaScript functions including what they call
 * (their own fragments are merged, so a function calling itself through
 * another is counted twice; --match narrows that table, e.g. --match dist/src/).
 */
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { table } from "./support.js";

export interface MapEntry {
  readonly start: number;
  readonly end: number;
  readonly name: string;
  readonly order: number;
}

/** The ranges of a perf map, sorted by start. */
export function readPerfMap(file: string): MapEntry[] {
  const entries: MapEntry[] = [];
  for (const [order, line] of readFileSync(file, "utf8").split("\n").entries()) {
    const match = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/i.exec(line);
    if (match === null) continue;
    const start = Number.parseInt(match[1] as string, 16);
    entries.push({ start, end: start + Number.parseInt(match[2] as string, 16), name: match[3] as string, order });
  }
  return entries.sort((a, b) => a.start - b.start);
}

/** The newest range of `entries` holding `address`. */
function lookUp(entries: readonly MapEntry[], address: number): MapEntry | undefined {
  let low = 0;
  let high = entries.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if ((entries[middle] as MapEntry).start <= address) low = middle + 1;
    else high = middle - 1;
  }
  let best: MapEntry | undefined;
  // Ranges starting before the address, nearest first; code objects are at most a few hundred KiB.
  for (let i = high; i >= 0 && i > high - 256; i--) {
    const entry = entries[i] as MapEntry;
    if (address < entry.end && (best === undefined || entry.order > best.order)) best = entry;
  }
  return best;
}

/** A JavaScript function's name from V8's perf map text: "JS:*handle file:///…/rest.js:59:17" → "handle dist/src/boards/wire/rest.js:59". */
function javaScriptName(raw: string): string {
  const text = raw.replace(/^(JS|LazyCompile|Function|Script):[*~^+]?'?/, "");
  return text
    .replace(/file:\/\/\S*?\/node_modules\//, "")
    .replace(/file:\/\/\S*?\/dist\//, "dist/")
    .replace(/:(\d+):\d+$/, ":$1");
}

export const GC_GROUP = "V8 garbage collector";
export const COMPILER_GROUP = "V8 compilers (JIT, parser)";

/** The group a function's instructions count towards. */
export function groupOf(name: string, object: string): string {
  if (name.startsWith("js ")) {
    if (name.includes(" dist/src/")) return "JavaScript: topwagers (dist/src)";
    if (name.includes(" dist/")) return "JavaScript: topwagers (other dist)";
    const pkg = /\s(@[^/\s]+\/[^/\s]+|[^/\s:]+)\//.exec(name)?.[1];
    if (name.includes(" node:")) return "JavaScript: Node's own (node:*)";
    return pkg === undefined ? "JavaScript: other" : `JavaScript: ${pkg}`;
  }
  if (
    /Scaveng|MarkCompact|Marking|Sweep|Heap::|MinorMS|MajorMS|ConcurrentMark|Evacuat|RememberedSet|Slot|GCTracer|IteratePointers|IterateObjectCache|BodyDescriptor|SizeFromMap|heap::base::/.test(
      name,
    )
  )
    return GC_GROUP;
  if (
    /compiler::|maglev::|turboshaft|Sparkplug|baseline::|Compiler::|Parser|Scanner|BytecodeGenerator|interpreter::/.test(
      name,
    )
  )
    return COMPILER_GROUP;
  if (name.startsWith("Builtins_")) return "V8 builtins (ICs, Promise, string, …)";
  if (name.startsWith("v8::") || name.includes("v8::internal")) return "V8 runtime";
  if (/nghttp2/.test(name)) return "nghttp2 (HTTP/2 framing)";
  if (/llhttp|node::http_parser|HTTPParser/.test(name)) return "llhttp (HTTP/1.1 parsing)";
  if (/sha256|SHA256|EVP_|OPENSSL|CRYPTO_|ossl_/.test(name)) return "OpenSSL (key hash)";
  if (name.startsWith("uv_") || name.includes("uv__")) return "libuv";
  if (name.startsWith("node::")) return "Node C++";
  if (object.includes("libc.so") || /malloc|free|memcpy|memmove|memset|strlen|__/.test(name))
    return "libc (malloc, memcpy, …)";
  if (name.startsWith("0x")) return "JIT code not in the perf map";
  return "other native";
}

export interface DumpProfile {
  /** Instructions of the whole dump. */
  readonly total: number;
  /** Self instructions by function (JavaScript named "js <name> <file>:<line>" when the perf map knows it). */
  readonly self: ReadonlyMap<string, number>;
  /** Inclusive instructions of calls, by caller and callee (calls between fragments of one function left out). */
  readonly calls: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** Self instructions by group (groupOf). */
  readonly groups: ReadonlyMap<string, number>;
}

/** Reads a callgrind dump; `map` (a perf map's ranges) names JIT-compiled JavaScript. */
export function readDump(text: string, map: readonly MapEntry[] = []): DumpProfile {
  // Callgrind's format: "fn=(id) name" starts a function's block (later "fn=(id)"), "cfn=" names the
  // callee of the next "calls=" line, whose following cost line is the inclusive cost of those calls.
  const fnNames = new Map<string, string>();
  const objects = new Map<string, string>();
  const nameOf = (spec: string, names: Map<string, string>) => {
    const match = /^\((\d+)\)(?:\s+(.*))?$/.exec(spec.trim());
    if (match === null) return spec.trim();
    if (match[2] !== undefined) names.set(match[1] as string, match[2]);
    return names.get(match[1] as string) ?? spec.trim();
  };
  const named = new Map<string, string>();
  const display = (raw: string): string => {
    let shown = named.get(raw);
    if (shown === undefined) {
      const entry = raw.startsWith("0x") ? lookUp(map, Number.parseInt(raw, 16)) : undefined;
      shown = entry === undefined ? raw : `js ${javaScriptName(entry.name)}`;
      named.set(raw, shown);
    }
    return shown;
  };
  const self = new Map<string, number>();
  const calls = new Map<string, Map<string, number>>();
  const objectOf = new Map<string, string>();
  let current = "";
  let currentObject = "";
  let callee: string | undefined;
  let pendingCall = false;
  let total = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("ob=")) {
      currentObject = nameOf(line.slice(3), objects);
    } else if (line.startsWith("fn=")) {
      current = display(nameOf(line.slice(3), fnNames));
      objectOf.set(current, currentObject);
    } else if (line.startsWith("cfn=")) {
      callee = display(nameOf(line.slice(4), fnNames));
    } else if (line.startsWith("cob=")) {
      nameOf(line.slice(4), objects);
    } else if (line.startsWith("calls=")) {
      pendingCall = true;
    } else if (/^[+\-*\d]/.test(line)) {
      const cost = Number(line.trim().split(/\s+/)[1] ?? 0);
      if (pendingCall) {
        pendingCall = false;
        if (callee !== undefined && callee !== current) {
          const out = calls.get(current) ?? new Map<string, number>();
          calls.set(current, out);
          out.set(callee, (out.get(callee) ?? 0) + cost);
        }
      } else {
        self.set(current, (self.get(current) ?? 0) + cost);
        total += cost;
      }
    }
  }
  const groups = new Map<string, number>();
  for (const [name, cost] of self) {
    const group = groupOf(name, objectOf.get(name) ?? "");
    groups.set(group, (groups.get(group) ?? 0) + cost);
  }
  return { total, self, calls, groups };
}

export async function runInstructionProfile(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      map: { type: "string" },
      requests: { type: "string" },
      top: { type: "string", default: "30" },
      match: { type: "string" },
    },
  });
  const file = positionals[0];
  if (file === undefined) {
    throw new Error(
      "usage: npm run bench -- instruction-profile <callgrind dump> [--map /tmp/perf-<pid>.map] [--requests N] [--top 30] [--match TEXT]",
    );
  }
  const text = readFileSync(file, "utf8");
  const pid = /^pid:\s*(\d+)/m.exec(text)?.[1];
  // The map kept beside the dump (bench protocols --instruction-profile), else the process's own.
  const beside = file.replace(/\.callgrind$/, ".map");
  const mapFile = values.map ?? (beside !== file && existsSync(beside) ? beside : `/tmp/perf-${pid}.map`);
  const map = existsSync(mapFile) ? readPerfMap(mapFile) : [];
  const perRequest = values.requests === undefined ? 1 : Number(values.requests);

  const { total, self, calls, groups } = readDump(text, map);
  const inclusive = new Map<string, number>();
  for (const name of new Set([...self.keys(), ...calls.keys()])) {
    let sum = self.get(name) ?? 0;
    for (const cost of calls.get(name)?.values() ?? []) sum += cost;
    inclusive.set(name, sum);
  }
  const top = Number(values.top);
  const unit = perRequest === 1 ? "instructions" : "instructions per request";
  const rows = (entries: Iterable<[string, number]>, limit: number) =>
    [...entries]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, cost]) => [name, Math.round(cost / perRequest), ((100 * cost) / total).toFixed(1)]);
  const match = values.match;
  const javaScript = [...inclusive.entries()].filter(
    ([name]) => name.startsWith("js ") && (match === undefined || name.includes(match)),
  );
  process.stdout.write(
    [
      "",
      `dump: ${file} (${map.length === 0 ? "no perf map: JavaScript unnamed" : `names from ${mapFile}`})`,
      `total: ${Math.round(total / perRequest)} ${unit}`,
      "",
      table(["group (self)", unit, "%"], rows(groups, groups.size)),
      "",
      table(["function (self)", unit, "%"], rows(self, top)),
      "",
      table(
        [`JavaScript function${match === undefined ? "" : ` matching ${match}`} (inclusive)`, unit, "%"],
        rows(javaScript, top),
      ),
      "",
    ].join("\n"),
  );
}
