/**
 * A deployment with no active signing key signs nothing (final results and signed boards go out unsigned), and
 * the signer says so each time, so the app can warn the operator instead of staying silent.
 */
import { describe, expect, it } from "vitest";
import { Signer } from "../../src/signing/core/signer.js";

describe("Signer without an active key", () => {
  it("answers undefined and tells onNoActiveKey each time something was to be signed", async () => {
    let told = 0;
    const signer = new Signer(
      { active: async () => undefined },
      { issuer: "https://casino.example", onNoActiveKey: () => told++ },
    );
    expect(await signer.sign({ race: "r1" })).toBeUndefined();
    expect(await signer.sign({ race: "r2" })).toBeUndefined();
    expect({ told, signatures: signer.signatures }).toEqual({ told: 2, signatures: 0 });
  });
});
