/**
 * The examples of docs/api.md, run as a reader would run them, against a
 * running server: the code blocks are read from the document itself (so the
 * page cannot drift from what works), with TOPWAGERS_URL and TOPWAGERS_KEY set
 * as the page says. curl and buf curl run in bash, the fetch example in Node,
 * the requests example in Debian's Python (skipped, saying what to install,
 * without python3-requests).
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_AFFILIATE, loadDemoData } from "../../src/cli/demo.js";
import { monthIndex, monthStart, movedByMonths, NOV_16 } from "../support/dates.js";
import { addBoard, createKey } from "../support/fixtures.js";
import { PYTHON, withoutPythonModules } from "../support/python.js";
import { raceServiceCall } from "../support/rest.js";
import { startTestServer, type TestServer } from "../support/server.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const API_MD = readFileSync(join(ROOT, "docs", "api.md"), "utf8");

/** The fenced code blocks of the section under `heading`, in order, with their language. */
function codeBlocks(heading: string, language: string): string[] {
  const found: string[] = [];
  let section = "";
  let fence: { language: string; lines: string[] } | undefined;
  for (const line of API_MD.split("\n")) {
    if (fence !== undefined) {
      if (line === "```") {
        if (section === heading && fence.language === language) found.push(fence.lines.join("\n"));
        fence = undefined;
      } else {
        fence.lines.push(line);
      }
    } else if (line.startsWith("```")) {
      fence = { language: line.slice(3).trim(), lines: [] };
    } else if (/^#{2,3} /.test(line)) {
      section = line.replace(/^#+ /, "");
    }
  }
  if (found.length === 0) throw new Error(`no ${language} block under "${heading}" in docs/api.md`);
  return found;
}

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function runProgram(file: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd: ROOT, env: { ...process.env, ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== "number") return reject(error);
      resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
    });
  });
}

let server: TestServer;
/** aff-examples: wagers in the second half of November 2026, the page's fixed period. */
let key: string;
/** aff-now: wagers in the current half-month, for the examples that compute it. */
let nowKey: string;
let work: string;
/** The demo's key: the demo data set loaded as `npm run demo` loads it, ending 2026-11-16T00:00:00Z. */
let demoKey: string;
const env = (apiKey = key) => ({ TOPWAGERS_URL: server.baseUrl, TOPWAGERS_KEY: apiKey });
const BAD_KEY = `tw_${"A".repeat(32)}`;

function currentHalfMonth(): [number, number] {
  const now = new Date();
  const firstHalf = now.getUTCDate() <= 15;
  const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), firstHalf ? 1 : 16) / 1000;
  const next = firstHalf
    ? Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 16)
    : Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return [start, next / 1000 - 1];
}

beforeAll(async () => {
  // The demo's look: avatars on avatars.example.com, the default avatar for users without one.
  server = await startTestServer("api_doc_examples");
  const db = server.database.db;
  key = (await createKey(db, "aff-examples")).secret;
  nowKey = (await createKey(db, "aff-now")).secret;
  const [currentStart] = currentHalfMonth();
  const avatar = (n: number) => `https://avatars.example.com/demo/${n}.png`;
  await addBoard(db, "aff-examples", [
    ["demo-user-1", "blaze_1007", avatar(1), ["44559.4614105", NOV_16 + 3600]],
    ["demo-user-2", "nova_1014", avatar(2), ["19330.5100052", NOV_16 + 7200]],
    ["demo-user-3", "rex_1021", "", ["14199.99090758", NOV_16 + 10800]],
  ]);
  // This half-month, whenever the test runs, and the second before it (which must not count).
  await addBoard(db, "aff-now", [
    ["now-1", "kai_1500", "", ["1.25", currentStart], ["1000000", currentStart - 1]],
    ["now-2", "luna_2000", avatar(9), ["0.00000001", currentStart + 1]],
  ]);
  // "Your first call" shows the demo's data: its users and wagers, loaded as the demo loads them.
  await loadDemoData(db, NOV_16);
  demoKey = (await createKey(db, DEMO_AFFILIATE)).secret;
  work = mkdtempSync(join(tmpdir(), "topwagers-api-doc-"));
}, 60_000);

afterAll(async () => {
  await server?.close();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

/**
 * Runs a shell example that streams until stopped: resolves with its output once `done(stdout)` holds, then
 * stops it (its whole process group: bash and the curl or buf it started).
 */
function streamProgram(script: string, environment: Record<string, string>, done: (stdout: string) => boolean) {
  return new Promise<string>((resolve, reject) => {
    const child = spawn("bash", ["-c", script], {
      cwd: ROOT,
      env: { ...process.env, ...environment },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const stop = () => {
      clearTimeout(timer);
      try {
        process.kill(-(child.pid as number), "SIGTERM");
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no complete output within 30 s: ${stdout}\n${stderr}`));
    }, 30_000);
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
      if (done(stdout)) {
        stop();
        resolve(stdout);
      }
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      if (!done(stdout)) reject(new Error(`exited ${code} before its output was complete: ${stdout}\n${stderr}`));
    });
  });
}

/** Runs a section's streaming shell example until `done`; returns its output and what the page shows for it. */
async function watchExample(section: string, shownAs: string, done: (stdout: string) => boolean) {
  const [script] = codeBlocks(section, "sh");
  const [shown] = codeBlocks(section, shownAs);
  return { shown, output: await streamProgram(script ?? "", env(), done) };
}

describe("docs/api.md examples", () => {
  it("your first call: the curl line answers the JSON the page shows", async () => {
    const [script, shown] = [codeBlocks("Your first call", "sh")[0] ?? "", codeBlocks("Your first call", "json")[0]];
    // The reader sets TOPWAGERS_URL and TOPWAGERS_KEY; the page's own export lines hold placeholders.
    const call = script
      .split("\n")
      .filter((line) => !line.startsWith("export "))
      .join("\n");
    const result = await runProgram("bash", ["-c", call], env(demoKey));
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(JSON.parse(shown ?? ""));
  });

  it("curl: the half-month request answers the ranked list", async () => {
    const result = await runProgram("bash", ["-c", codeBlocks("curl", "sh")[0] ?? ""], env());
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      data: [
        { username: "blaze_1007", avatar: "https://avatars.example.com/demo/1.png", totalWagered: 44559.4614105 },
        { username: "nova_1014", avatar: "https://avatars.example.com/demo/2.png", totalWagered: 19330.5100052 },
        { username: "rex_1021", avatar: "https://www.gravatar.com/avatar/?d=mp&s=256", totalWagered: 14199.99090758 },
      ],
      errors: null,
    });
  });

  it("JavaScript fetch: prints the current half-month, and the error envelope for a bad key", async () => {
    const file = join(work, "top-wagers.mjs");
    writeFileSync(file, codeBlocks("JavaScript (`fetch`, Node.js 18+ or any server-side runtime)", "js")[0] ?? "");
    const result = await runProgram(process.execPath, [file], env(nowKey));
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("1. kai_1500 1.25\n2. luna_2000 0.00000001\n");

    const refused = await runProgram(process.execPath, [file], env(BAD_KEY));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      "HTTP 401 unauthenticated: missing or invalid API key (send Authorization Bearer with your key)\n",
    );
  });

  const noRequests = withoutPythonModules(
    "requests",
    "SKIPPED: the Python requests example needs /usr/bin/python3 with requests (apt-get install -y python3-requests)",
  );

  it.skipIf(noRequests !== undefined)(
    noRequests ?? "Python requests: prints the current half-month with exact totals, and the error for a bad key",
    async () => {
      const file = join(work, "top_wagers.py");
      writeFileSync(file, codeBlocks("Python (`requests`)", "python")[0] ?? "");
      const result = await runProgram(PYTHON, [file], env(nowKey));
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      // Decimal keeps every digit of the total; ":f" writes it without an exponent.
      expect(result.stdout).toBe("1. kai_1500 1.25\n2. luna_2000 0.00000001\n");

      const refused = await runProgram(PYTHON, [file], env(BAD_KEY));
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        "HTTP 401 unauthenticated: missing or invalid API key (send Authorization Bearer with your key)\n",
      );
    },
  );

  it("gRPC: buf curl over gRPC and curl over Connect answer with the exact decimal, user id and rank", async () => {
    const [bufCurl, connectCurl] = codeBlocks("gRPC with `buf curl`", "sh");
    const expected = {
      data: [
        {
          username: "blaze_1007",
          avatar: "https://avatars.example.com/demo/1.png",
          totalWagered: 44559.4614105,
          totalWageredDecimal: "44559.4614105",
          userId: "demo-user-1",
          rank: 1,
          weightedWagered: 44559.4614105,
          weightedWageredDecimal: "44559.4614105",
        },
        {
          username: "nova_1014",
          avatar: "https://avatars.example.com/demo/2.png",
          totalWagered: 19330.5100052,
          totalWageredDecimal: "19330.5100052",
          userId: "demo-user-2",
          rank: 2,
          weightedWagered: 19330.5100052,
          weightedWageredDecimal: "19330.5100052",
        },
      ],
    };
    for (const script of [bufCurl, connectCurl]) {
      const result = await runProgram("bash", ["-c", script ?? ""], env());
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual(expected);
    }
  }, 60_000);

  it("live boards: curl -N prints the stream's start exactly as the page shows it", async () => {
    const { shown, output } = await watchExample(
      "Watching with curl",
      "text",
      (out) => out.includes("data:") && out.includes("\n\n", out.indexOf("data:")),
    );
    expect(output).toBe(`${shown}\n`);
  });

  it("live boards: buf curl prints the first message as the page shows it", async () => {
    const { shown, output } = await watchExample(
      "Watching with `buf curl`",
      "json",
      (out) => out.trimEnd().endsWith("}") && out.includes('"asOf"'),
    );
    const message = JSON.parse(output) as { asOf: string };
    const page = JSON.parse(shown ?? "") as { asOf: string };
    // as_of is when the board was computed: the page shows one moment, the run another.
    expect(Math.abs(Number(message.asOf) - Date.now() / 1000)).toBeLessThan(60);
    expect({ ...message, asOf: page.asOf }).toEqual(page);
  }, 60_000);
});

describe("docs/api.md races examples", () => {
  /** A RaceService call through Connect's JSON POST with the examples' key. */
  function raceCall(method: string, body: object): Promise<Record<string, unknown>> {
    return raceServiceCall(server.baseUrl, key, method, body);
  }

  it("defining, reading, listing, changing and cancelling: each curl answers as the page shows", async () => {
    // The page tells its story in November 2026 (its "now" is 1795756330): the monthly series' race is live, the
    // December race is next month's. The run moves every date of the page by whole months to today's month, so
    // the story holds whenever it runs: the December race is always next month's and still scheduled.
    const PAGE_NOW = 1_795_756_330;
    const months = monthIndex(Math.floor(Date.now() / 1000)) - monthIndex(PAGE_NOW);
    const moved = (text: string) =>
      text.replace(/\b1[78]\d{8}\b/g, (seconds) => String(movedByMonths(Number(seconds), months)));
    const [create] = codeBlocks("Defining a race", "sh").map(moved);
    const [shownCreate] = codeBlocks("Defining a race", "json").map(moved);
    const created = await runProgram("bash", ["-c", create ?? ""], env());
    expect(created.code, created.stderr).toBe(0);
    const answer = JSON.parse(created.stdout) as { race: Record<string, unknown> };
    const page = JSON.parse(shownCreate ?? "") as { race: Record<string, unknown> };
    // The race's id, its affiliate and the clock are the run's own; it starts next month, so it is scheduled.
    const own = { id: answer.race.id, affiliateId: answer.race.affiliateId, now: answer.race.now };
    expect(answer.race).toEqual({ ...page.race, ...own });
    expect(answer.race.state).toBe("RACE_STATE_SCHEDULED");
    const id = String(answer.race.id);

    // A monthly series begun in the page's month, whose race now is this month's: the examples' users wager in it.
    const thisMonth = monthStart(monthIndex(Math.floor(Date.now() / 1000)));
    await addBoard(server.database.db, "aff-examples", [
      ["demo-user-1", "blaze_1007", "https://avatars.example.com/demo/1.png", ["300", thisMonth]],
      ["demo-user-2", "nova_1014", "https://avatars.example.com/demo/2.png", ["200", thisMonth + 1]],
    ]);
    await raceCall("CreateRace", {
      rules: {
        slug: "monthly",
        title: "$1,000 monthly race",
        startTimestamp: "1793491200",
        repeat: "RACE_REPEAT_MONTHLY",
        prizes: ["500.00", "250.00"],
      },
    });
    const [read, getRace] = codeBlocks("Reading a race", "sh");
    const [shownRead] = codeBlocks("Reading a race", "json");
    const race = await runProgram("bash", ["-c", read ?? ""], env());
    expect(race.code, race.stderr).toBe(0);
    const body = JSON.parse(race.stdout) as { data: Record<string, unknown>; errors: null };
    const pageBody = JSON.parse(shownRead ?? "") as { data: Record<string, unknown> };
    expect(Object.keys(body.data)).toEqual(Object.keys(pageBody.data));
    expect([body.data.state, body.data.startTimestamp]).toEqual(["live", thisMonth]);
    expect((body.data.entries as { username: string; prize: string }[]).map((e) => [e.username, e.prize])).toEqual([
      ["blaze_1007", "500.00"],
      ["nova_1014", "250.00"],
    ]);
    const rpc = await runProgram("bash", ["-c", getRace ?? ""], env());
    expect((JSON.parse(rpc.stdout) as { race: { id: string } }).race.id).toBe(body.data.id);

    for (const script of codeBlocks("Listing races", "sh")) {
      const listed = await runProgram("bash", ["-c", script], env());
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(/"races":\[\{"id":"race_/);
    }

    // The reader puts their race's id in the change and the cancellation.
    const [update, cancel] = codeBlocks("Changing and cancelling a race", "sh").map((script) =>
      script.replaceAll("race_eph6ncxb52ri5x5opd5x", id),
    );
    const changed = JSON.parse((await runProgram("bash", ["-c", update ?? ""], env())).stdout) as {
      race?: { rules: { title: string; prizes: string[] } };
    };
    expect([changed.race?.rules.title, changed.race?.rules.prizes]).toEqual([
      "$12,000 December race",
      ["6000.00", "4000.00", "2000.00"],
    ]);
    const cancelled = JSON.parse((await runProgram("bash", ["-c", cancel ?? ""], env())).stdout) as {
      race: { state: string };
    };
    expect(cancelled.race.state).toBe("RACE_STATE_CANCELLED");
  }, 60_000);

  it("the digest: the page's Node.js check recomputes a final race's digest from the REST answer", async () => {
    const created = await raceCall("CreateRace", {
      rules: {
        slug: "digest-check",
        title: "Digest check",
        startTimestamp: String(NOV_16),
        endTimestamp: String(NOV_16 + 86_399),
        prizes: ["100.50", "50"],
        reviewSeconds: 0,
      },
      // Over before it is made (the examples' wagers are in November 2026): recorded as history on purpose.
      allowPast: true,
    });
    const id = (created.race as { id: string }).id;
    // The race clock (server.ts runs it every RACE_CLOCK_MS) announces its start and end and freezes it.
    await server.app.races.tick();
    await server.app.races.tick();
    const file = join(work, "race-digest.mjs");
    writeFileSync(file, codeBlocks("The digest", "js")[0] ?? "");
    const result = await runProgram(process.execPath, [file, id], env());
    expect([result.code, result.stderr, result.stdout]).toEqual([0, "", "digest matches\n"]);
  });
  it("watching a race: curl -N prints the race as the page shows it, its data the race read's answer", async () => {
    const [script] = codeBlocks("Watching a race", "sh");
    const [shown] = codeBlocks("Watching a race", "text");
    const output = await streamProgram(script ?? "", env(), (out) => out.includes("data:") && out.endsWith("\n\n"));
    const [retry, event, id, data] = output.split("\n").filter((line) => line !== "");
    const [shownRetry, shownEvent, shownId] = (shown ?? "").split("\n").filter((line) => line !== "");
    expect([retry, event]).toEqual([shownRetry, shownEvent]);
    expect(id?.startsWith("id: ")).toBe(true);
    expect(shownId?.startsWith("id: ")).toBe(true);
    const answer = JSON.parse((data ?? "").slice("data: ".length)) as { data: { slug: string; version: string } };
    expect(answer.data.slug).toBe("monthly");
    expect(`id: ${answer.data.version}`).toBe(id);
    // The event is the race read's answer: the same race and version as GET /races/monthly now.
    const read = (await (
      await fetch(`${server.baseUrl}/races/monthly`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as { data: { version: string } };
    expect(read.data.version).toBe(answer.data.version);
  }, 60_000);
});
