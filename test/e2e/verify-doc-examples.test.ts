/**
 * docs/verify.md's offline checks, run as a reader would run them (issue 36 item 3, issue 46 part 1): the code
 * blocks are read from the document, the files they read are what our server answers, and each is handed every
 * kind of signed object (test/support/signed-kinds.ts): only the final result of the race it was asked about
 * passes, as this release signs it and as 0.4.0 did (no typ); the same result asked as another race, a live race event and a live board rebuilt as compact JWSs
 * (live key), a live event as 0.4.0 signed it (result key, no typ), an `alg: none` copy, a copy signed by a key
 * that is not the operator's and a changed copy are
 * each refused with the reason the script gives. The chain script passes the affiliate's two results and refuses
 * a gap, another affiliate, and a live object in the chain. The Python check is an implementation independent of
 * ours: Debian's PyJWT with cryptography (skipped, saying what to install, without them).
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PYTHON, withoutPythonModules } from "../support/python.js";
import { useTestServer } from "../support/server.js";
import { everyKindSigned, type SignedKinds, type SignedObject, tampered } from "../support/signed-kinds.js";

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

const AFFILIATE = "docs-aff";
let work = "";
let kinds: SignedKinds;

beforeAll(async () => {
  kinds = await everyKindSigned(server, AFFILIATE, ISSUER);
  // Under the checkout, so the Node examples find jose in its node_modules as a reader's project would.
  mkdirSync(join(ROOT, "test-artifacts"), { recursive: true });
  work = mkdtempSync(join(ROOT, "test-artifacts", "verify-docs-"));
  writeFileSync(join(work, "jwks.json"), await (await fetch(`${server.baseUrl}/.well-known/jwks.json`)).text());
  writeFileSync(join(work, "check.mjs"), codeBlocks("With Node and jose", "js")[0] as string);
  writeFileSync(join(work, "check.py"), codeBlocks("With Python and PyJWT", "python")[0] as string);
  writeFileSync(join(work, "chain.mjs"), codeBlocks("Checking the chain", "js")[0] as string);
}, 60_000);

afterAll(() => {
  if (work !== "") rmSync(work, { recursive: true, force: true });
});

interface Outcome {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: unknown;
}

const refused = (stderr: unknown): Outcome => ({ code: 1, stdout: "", stderr });
/** A Node script that threw `error` (jose's), or a Python one that raised it: its name and message on stderr. */
const threw = (error: string) => refused(expect.stringContaining(error));

/**
 * Each object a check is handed, the race it is asked about, and what the Node and the Python check answer:
 * only the first two cases pass.
 */
const CASES: readonly {
  readonly what: string;
  readonly object: (k: SignedKinds) => SignedObject;
  readonly asked?: (k: SignedKinds) => string;
  readonly node: (k: SignedKinds) => Outcome;
  readonly python: (k: SignedKinds) => Outcome;
}[] = [
  {
    what: "the final result of the race asked about",
    object: (k) => k.result,
    node: (k) => ({ code: 0, stdout: printed(k), stderr: "" }),
    python: (k) => ({ code: 0, stdout: printed(k), stderr: "" }),
  },
  {
    what: "the final result of the race asked about as 0.4.0 signed it (no typ, no state)",
    object: (k) => k.oldResult,
    node: (k) => ({ code: 0, stdout: printed(k), stderr: "" }),
    python: (k) => ({ code: 0, stdout: printed(k), stderr: "" }),
  },
  {
    what: "the same result asked as another race's",
    object: (k) => k.result,
    asked: (k) => k.next.raceId as string,
    node: (k) => refused(`not a final result of ${k.next.raceId}: race ${k.result.raceId}\n`),
    python: (k) => refused(`not a final result of ${k.next.raceId}: race ${k.result.raceId}\n`),
  },
  {
    what: "a live race event (live key) rebuilt as a compact JWS",
    object: (k) => k.liveRace,
    node: () => threw("JWKSNoMatchingKey: no applicable key found in the JSON Web Key Set"),
    python: (k) => refused(`not one of the operator's result keys: ${liveKidOf(k.liveRace)}\n`),
  },
  {
    what: "a live board (live key) rebuilt as a compact JWS",
    object: (k) => k.liveBoard,
    asked: (k) => k.result.raceId as string,
    node: () => threw("JWKSNoMatchingKey: no applicable key found in the JSON Web Key Set"),
    python: (k) => refused(`not one of the operator's result keys: ${liveKidOf(k.liveBoard)}\n`),
  },
  {
    what: "a live race event as 0.4.0 signed it (result key, no typ)",
    object: (k) => k.oldLiveRace,
    node: (k) => refused(`not a final result of ${k.oldLiveRace.raceId}: type topwagers.race, state live\n`),
    python: (k) => refused(`not a final result of ${k.oldLiveRace.raceId}: type topwagers.race, state live\n`),
  },
  {
    what: "the result with alg: none",
    object: (k) => k.algNone,
    node: () => threw(`JOSEAlgNotAllowed: "alg" (Algorithm) Header Parameter value not allowed`),
    python: () => threw("jwt.exceptions.InvalidAlgorithmError: The specified alg value is not allowed"),
  },
  {
    what: "the result signed by a key that is not the operator's",
    object: (k) => k.foreign,
    node: () => threw("JWKSNoMatchingKey: no applicable key found in the JSON Web Key Set"),
    python: () => refused("not one of the operator's result keys: not-ours\n"),
  },
  {
    what: "the result with a byte of its payload changed",
    object: (k) => ({ ...k.result, jws: tampered(k.result.jws) }),
    node: () => threw("JWSSignatureVerificationFailed: signature verification failed"),
    python: () => threw("jwt.exceptions.InvalidSignatureError: Signature verification failed"),
  },
];

/** What a check prints for the first result: the issuer, race and key, then alice's and bob's lines. */
const printed = (k: SignedKinds) =>
  `valid: ${ISSUER} signed race ${k.result.raceId} with key ${k.resultKid}\n1 alice 300 100.00\n2 bob 200.5 50.00\n`;

/** The key id in a JWS's header. */
const liveKidOf = (object: SignedObject) =>
  (JSON.parse(Buffer.from(object.jws.split(".")[0] as string, "base64url").toString("utf8")) as { kid: string }).kid;

/** Runs `program` on `script` with `object` in result.json, asked about `raceId`. */
async function checked(program: string, script: string, object: SignedObject, raceId: string): Promise<Outcome> {
  writeFileSync(join(work, "result.json"), JSON.stringify({ jws: object.jws }));
  return run(program, [script, raceId], work);
}

describe("docs/verify.md's offline checks", () => {
  it("every case is one kind of object, each from the server as a viewer gets it", () => {
    const header = (object: SignedObject) =>
      JSON.parse(Buffer.from(object.jws.split(".")[0] as string, "base64url").toString("utf8"));
    expect([kinds.result, kinds.liveRace, kinds.liveBoard, kinds.oldLiveRace, kinds.algNone].map(header)).toEqual([
      { alg: "EdDSA", kid: kinds.resultKid, typ: "race-result+jws" },
      { alg: "EdDSA", kid: liveKidOf(kinds.liveRace), typ: "live-race+jws" },
      { alg: "EdDSA", kid: liveKidOf(kinds.liveRace), typ: "live-board+jws" },
      { alg: "EdDSA", kid: kinds.resultKid },
      { alg: "none", kid: kinds.resultKid, typ: "race-result+jws" },
    ]);
    expect(liveKidOf(kinds.liveRace)).not.toBe(kinds.resultKid);
  });

  for (const { what, object, asked, node, python } of CASES) {
    it(`(a) Node with jose: ${what}`, async () => {
      const given = object(kinds);
      const outcome = await checked(process.execPath, "check.mjs", given, asked?.(kinds) ?? (given.raceId as string));
      expect(outcome).toEqual(node(kinds));
    });

    it.skipIf(pythonMissing !== undefined)(`(b) Python with PyJWT: ${what}`, async () => {
      const given = object(kinds);
      const outcome = await checked(PYTHON, "check.py", given, asked?.(kinds) ?? (given.raceId as string));
      expect(outcome).toEqual(python(kinds));
    });
  }

  it("(c) the chain check passes the affiliate's results and refuses a gap, another affiliate, and anything live", async () => {
    const chained = async (objects: readonly SignedObject[], affiliate = AFFILIATE) => {
      writeFileSync(join(work, "results.json"), JSON.stringify(objects.map(({ jws }) => ({ jws }))));
      return run(process.execPath, ["chain.mjs", affiliate], work);
    };
    const { result, next, liveRace, liveBoard, oldLiveRace, algNone } = kinds;
    expect(await chained([result, next])).toEqual({
      code: 0,
      stdout: `chain of 2 results of ${AFFILIATE} intact\n`,
      stderr: "",
    });
    // The first as 0.4.0 signed it (no typ, no state) is a result as good.
    expect(await chained([kinds.oldResult])).toEqual({
      code: 0,
      stdout: `chain of 1 results of ${AFFILIATE} intact\n`,
      stderr: "",
    });
    expect(await chained([next])).toEqual(
      refused("result 1: the chain is broken here: a result before it was removed or replaced\n"),
    );
    expect(await chained([next, result])).toEqual(
      refused("result 1: the chain is broken here: a result before it was removed or replaced\n"),
    );
    expect(await chained([result, next], "other-aff")).toEqual(
      refused(`result 1: affiliate ${AFFILIATE}'s, not other-aff's\n`),
    );
    expect(await chained([result, oldLiveRace])).toEqual(
      refused("result 2: not a final result (typ undefined, type topwagers.race)\n"),
    );
    for (const live of [liveRace, liveBoard]) {
      expect(await chained([result, live])).toEqual(
        threw("JWKSNoMatchingKey: no applicable key found in the JSON Web Key Set"),
      );
    }
    expect(await chained([algNone])).toEqual(
      threw(`JOSEAlgNotAllowed: "alg" (Algorithm) Header Parameter value not allowed`),
    );
  });
});
