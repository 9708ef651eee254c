/**
 * The README's ingest example, run as written (issue 20, item 10): its curl and buf curl commands against
 * a real server's internal listener, each answering what the comment under it shows. buf curl runs from a
 * folder without buf.yaml, so the schema can only come from the internal listener's server reflection (the
 * README once said that listener did not answer it).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "../support/database.js";
import { type ServerProcess, startServerProcess } from "../support/processes.js";

const run = promisify(execFile);
const INGEST_TOKEN = "readme-ingest-token-0123456789abcdef";
const BUF = join(process.cwd(), "node_modules/.bin/buf");

/** The README's sh block with the ingest calls: each command (continuation lines joined) and the comment after it. */
function readmeCalls(): { command: string; shown: string }[] {
  const readme = readFileSync("README.md", "utf8");
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string);
  const block = blocks.find((b) => b.includes("WagerIngestService/UpsertUsers"));
  if (block === undefined) throw new Error("no sh block with the ingest calls in README.md");
  const calls: { command: string; shown: string }[] = [];
  let command = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("# ")) {
      calls.push({ command, shown: line.slice(2) });
      command = "";
    } else if (line.trim() !== "") {
      command += `${line}\n`;
    }
  }
  return calls;
}

const database = useTestDatabase("readme_ingest");
let server: ServerProcess;
let internalPort: number;
let work: string;

beforeAll(async () => {
  server = await startServerProcess({ DATABASE_URL: database.url, INGEST_TOKEN });
  internalPort = Number((await server.waitForLog((l) => l.msg.startsWith("internal listener"))).port);
  work = mkdtempSync(join(tmpdir(), "topwagers-readme-"));
}, 30_000);

afterAll(async () => {
  await server?.stop();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe("README: ingest", () => {
  it("the example's calls answer what it shows, buf curl by the internal listener's reflection", async () => {
    const calls = readmeCalls();
    // export INGEST_TOKEN=… and npm start & are the reader's set-up: here the server is already running.
    const [setUp, ...rest] = calls;
    expect(setUp?.command).toMatch(/^export INGEST_TOKEN=\$\(openssl rand -hex 32\)\nnpm start &/);
    expect(setUp?.command).toContain("\ncurl -s http://127.0.0.1:9090/topwagers.v1.WagerIngestService/UpsertUsers");
    expect(rest.map((c) => /buf curl|curl/.exec(c.command)?.[0])).toEqual(["buf curl", "buf curl"]);
    const setUpCall = (setUp?.command ?? "").split("\n").slice(2).join("\n");
    for (const [index, call] of [{ command: setUpCall, shown: setUp?.shown ?? "" }, ...rest].entries()) {
      const script = call.command
        .replaceAll("127.0.0.1:9090", `127.0.0.1:${internalPort}`)
        .replaceAll("npx buf curl", `"${BUF}" curl`);
      const { stdout } = await run("bash", ["-c", script], {
        cwd: work,
        env: { PATH: process.env.PATH ?? "", INGEST_TOKEN, BUF_CACHE_DIR: join(work, "cache") },
        timeout: 30_000,
      });
      expect({ index, answer: JSON.parse(stdout) }).toEqual({ index, answer: JSON.parse(call.shown) });
    }
  }, 60_000);
});
