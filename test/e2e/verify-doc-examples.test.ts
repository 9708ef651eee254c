/**
 * docs/verify.md's offline checks, run as a reader would run them (issue 36 item 3): the code blocks are read
 * from the document, the files they read are what our server answers, and each must accept a real signed
 * result and refuse one with a byte of its payload changed. The Python check is an implementation independent of
 * ours: Debian's PyJWT with cryptography (skipped, saying what to install, without them).
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PYTHON, withoutPythonModules } from "../support/python.js";
import { useTestServer } from "../support/server.js";
import { activeSigningKey, signedRace } from "../support/signed-races.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const VERIFY_MD = readFileSync(join(ROOT, "docs", "verify.md"), "utf8");
const ISSUER = "https://casino.example";
const server = useTestServer("verify_docs", { ISSUER });

/** The fenced blocks of `language` under the heading `heading` (## or ###), in order. */
function codeBlocks(heading: string, language: string): string[] {
  const section = VERIFY_MD.slice(VERIFY_MD.indexOf(`# ${heading}\n`));
  const end = section.slice(1).search(/\n#{2,3} /);
  const text = end < 0 ? section : section.slice(0, end + 1);
  return [...text.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\\n\`\`\``, "g"))].map((m) => m[1] as string);
}

function run(file: string, args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd, timeout: 30_000 }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== "number") return reject(error);
      resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
    });
  });
}

const pythonMissing = withoutPythonModules(
  "jwt, cryptography",
  "SKIPPED: Debian's PyJWT is missing; install it with: apt-get install -y python3-jwt python3-cryptography",
);

let work = "";
let raceId = "";
let kid = "";
let signed: { jws: string } = { jws: "" };

/** The same result with bob renamed in its payload, signature kept. */
function tampered(jws: string): string {
  const [header, payload, signature] = jws.split(".") as [string, string, string];
  const changed = Buffer.from(payload, "base64url").toString("utf8").replace('"bob"', '"rob"');
  return [header, Buffer.from(changed, "utf8").toString("base64url"), signature].join(".");
}

beforeAll(async () => {
  kid = (await activeSigningKey(server.database.db)).kid;
  raceId = await signedRace(server.database.db, "docs-aff", ISSUER);
  // Under the checkout, so the Node examples find jose in its node_modules as a reader's project would.
  mkdirSync(join(ROOT, "test-artifacts"), { recursive: true });
  work = mkdtempSync(join(ROOT, "test-artifacts", "verify-docs-"));
  writeFileSync(join(work, "jwks.json"), await (await fetch(`${server.baseUrl}/.well-known/jwks.json`)).text());
  signed = (await (await fetch(`${server.baseUrl}/verify/${raceId}/signed`)).json()) as { jws: string };
  writeFileSync(join(work, "check.mjs"), codeBlocks("With Node and jose", "js")[0] as string);
  writeFileSync(join(work, "check.py"), codeBlocks("With Python and PyJWT", "python")[0] as string);
  writeFileSync(join(work, "chain.mjs"), codeBlocks("Checking the chain", "js")[0] as string);
});

afterAll(() => {
  if (work !== "") rmSync(work, { recursive: true, force: true });
});

const expected = () =>
  `valid: ${ISSUER} signed race ${raceId} with key ${kid}\n1 alice 300 100.00\n2 bob 200.5 50.00\n`;

describe("docs/verify.md's offline checks", () => {
  it("(a) Node with jose accepts the real result and refuses a changed one", async () => {
    writeFileSync(join(work, "result.json"), JSON.stringify(signed));
    expect(await run(process.execPath, ["check.mjs"], work)).toMatchObject({ code: 0, stdout: expected() });
    writeFileSync(join(work, "result.json"), JSON.stringify({ jws: tampered(signed.jws) }));
    const refused = await run(process.execPath, ["check.mjs"], work);
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([
      1,
      "",
      expect.stringContaining("signature verification failed"),
    ]);
  });

  it.skipIf(pythonMissing !== undefined)(
    "(b) Python with PyJWT accepts the real result and refuses a changed one",
    async () => {
      writeFileSync(join(work, "result.json"), JSON.stringify(signed));
      expect(await run(PYTHON, ["check.py"], work)).toMatchObject({ code: 0, stdout: expected() });
      writeFileSync(join(work, "result.json"), JSON.stringify({ jws: tampered(signed.jws) }));
      const refused = await run(PYTHON, ["check.py"], work);
      expect([refused.code, refused.stdout, refused.stderr]).toEqual([
        1,
        "",
        expect.stringContaining("InvalidSignatureError"),
      ]);
    },
  );

  it("(c) the chain check passes the affiliate's results and finds a removed one", async () => {
    writeFileSync(join(work, "results.json"), JSON.stringify([signed]));
    expect(await run(process.execPath, ["chain.mjs"], work)).toMatchObject({
      code: 0,
      stdout: "chain of 1 results intact\n",
    });
    // A result whose chain says it is the second, with the first left out.
    const second = { ...JSON.parse(Buffer.from(signed.jws.split(".")[1] as string, "base64url").toString("utf8")) };
    second.chain = { sequence: 2, previous: { raceId: "race_x", sha256: "0".repeat(64) } };
    const forged = `e30.${Buffer.from(JSON.stringify(second)).toString("base64url")}.AA`;
    writeFileSync(join(work, "results.json"), JSON.stringify([{ jws: forged }]));
    const broken = await run(process.execPath, ["chain.mjs"], work);
    expect([broken.code, broken.stderr]).toEqual([
      1,
      "broken at result 1: a result before it was removed or replaced\n",
    ]);
  });
});
