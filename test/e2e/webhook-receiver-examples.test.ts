/**
 * docs/webhooks.md's receivers, run as written: the Python function (standard library only, run by
 * python3) accepts a message signed here under either secret of a rotation and refuses another
 * secret, a changed body and an old timestamp; the TypeScript receiver's `standardwebhooks` call does
 * the same.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { newWebhookSecret, webhookHeaders } from "../../src/webhooks/core/signature.js";

const DOC = readFileSync("docs/webhooks.md", "utf8");

function codeBlock(language: string): string {
  const match = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(DOC);
  if (match?.[1] === undefined) throw new Error(`docs/webhooks.md has no ${language} block`);
  return match[1];
}

describe("the receivers in docs/webhooks.md", () => {
  const [old, current] = [newWebhookSecret(), newWebhookSecret()];
  const body = '{"type":"webhook.test","timestamp":"2026-11-27T05:00:00.000Z","data":{"note":"é ✓"}}';
  const now = Math.floor(Date.now() / 1000);
  const headers = webhookHeaders([current, old], "msg_example", now, body);
  const stale = webhookHeaders([current], "msg_example", now - 600, body);

  it("Python: the hand-checked HMAC accepts both secrets of a rotation and refuses the rest", () => {
    const cases = [
      [current, headers, body],
      [old, headers, body],
      [newWebhookSecret(), headers, body],
      [current, headers, `${body} `],
      [current, stale, body],
    ];
    const script = `${codeBlock("python")}
import json, sys
for secret, headers, body in json.loads(sys.stdin.read()):
    print(verify(secret, headers, body.encode()))
`;
    const run = spawnSync("python3", ["-c", script], { input: JSON.stringify(cases), encoding: "utf8" });
    expect([run.status, run.stderr]).toEqual([0, ""]);
    expect(run.stdout).toBe("True\nTrue\nFalse\nFalse\nFalse\n");
  });

  it("TypeScript: the reference library does the same", () => {
    expect(codeBlock("ts")).toContain("webhook.verify(rawBody, headers)");
    for (const secret of [current, old]) expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow("No matching signature found");
    expect(() => new Webhook(current).verify(body, stale)).toThrow("Message timestamp too old");
  });
});
