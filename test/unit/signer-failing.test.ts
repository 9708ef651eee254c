/**
 * A signer says when its key cannot sign (issue 51): `failing` names why its last attempt failed
 * (key_read_failed: the active key could not be read; key_unopenable: it was read and does not open here, issue 47),
 * until a signature succeeds, and `topwagers_signing_failing{purpose,reason}` shows it on /metrics, what the
 * SigningFailing alert reads.
 */
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { registerSignatureMetrics } from "../../src/platform/observability/signature-metrics.js";
import { RACE_RESULT_KIND } from "../../src/ports/signing.js";
import { makeSigningKey } from "../../src/signing/core/keys.js";
import { Signer } from "../../src/signing/core/signer.js";
import { UnopenableSecretError } from "../../src/values/sealed-secret.js";

const RESULT = { type: RACE_RESULT_KIND.type, race: "r1" };

/** The gauge's lines as the registry writes them. */
async function gaugeLines(registry: Registry): Promise<string[]> {
  return (await registry.metrics()).split("\n").filter((line) => line.startsWith("topwagers_signing_failing{"));
}

describe("a signer whose key cannot be read or opened", () => {
  it("fails, says key_unopenable until a signature succeeds, and /metrics shows it by purpose", async () => {
    const key = await makeSigningKey();
    let refuse = true;
    const store = {
      active: async () => {
        if (refuse)
          throw new UnopenableSecretError("signing-key:x", "other_key", "the secret signing-key:x was sealed …");
        return key;
      },
    };
    const signer = new Signer(store, { issuer: "https://casino.example", refreshMs: 0 });
    const live = new Signer({ active: async () => undefined }, { issuer: "https://casino.example", purpose: "live" });
    const registry = new Registry();
    registerSignatureMetrics(registry, { signatures: 0 }, { signatures: 0 }, [signer, live]);
    expect(await gaugeLines(registry)).toEqual([
      'topwagers_signing_failing{purpose="result",reason="key_read_failed"} 0',
      'topwagers_signing_failing{purpose="result",reason="key_unopenable"} 0',
      'topwagers_signing_failing{purpose="live",reason="key_read_failed"} 0',
      'topwagers_signing_failing{purpose="live",reason="key_unopenable"} 0',
    ]);

    await expect(signer.sign(RESULT)).rejects.toThrow("was sealed");
    await expect(signer.withActiveKey()).rejects.toThrow("was sealed");
    expect(await live.sign({ type: "topwagers.live-board.v1" })).toBeUndefined();
    expect({ result: signer.failing, live: live.failing }).toEqual({ result: "key_unopenable", live: undefined });
    expect(await gaugeLines(registry)).toEqual([
      'topwagers_signing_failing{purpose="result",reason="key_read_failed"} 0',
      'topwagers_signing_failing{purpose="result",reason="key_unopenable"} 1',
      'topwagers_signing_failing{purpose="live",reason="key_read_failed"} 0',
      'topwagers_signing_failing{purpose="live",reason="key_unopenable"} 0',
    ]);

    refuse = false;
    expect((await signer.sign(RESULT))?.kid).toBe(key.kid);
    expect({ failing: signer.failing, signatures: signer.signatures }).toEqual({ failing: undefined, signatures: 1 });
    expect(await gaugeLines(registry)).toEqual([
      'topwagers_signing_failing{purpose="result",reason="key_read_failed"} 0',
      'topwagers_signing_failing{purpose="result",reason="key_unopenable"} 0',
      'topwagers_signing_failing{purpose="live",reason="key_read_failed"} 0',
      'topwagers_signing_failing{purpose="live",reason="key_unopenable"} 0',
    ]);
  });

  it("a key read that finds no active key is not a failure (signing is off)", async () => {
    let refuse = true;
    const signer = new Signer(
      {
        active: async () => {
          if (refuse) throw new Error("connect ECONNREFUSED 127.0.0.1:3306");
          return undefined;
        },
      },
      { issuer: "https://casino.example", refreshMs: 0 },
    );
    await expect(signer.sign(RESULT)).rejects.toThrow("ECONNREFUSED");
    expect(signer.failing).toBe("key_read_failed");
    refuse = false;
    expect(await signer.sign(RESULT)).toBeUndefined();
    expect(signer.failing).toBeUndefined();
  });
});
