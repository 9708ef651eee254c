/**
 * What `topwagers_readiness{status}` reads (issue 51): the status readiness last answered, kept after a probe and
 * turned to shutting_down by stopServing, also when a probe that began before ends after it.
 */
import { describe, expect, it } from "vitest";
import { Readiness } from "../../src/platform/observability/readiness.js";

describe("Readiness.lastStatus", () => {
  it("is undefined before the first probe, then the answer of the last one", async () => {
    let version: number | Error = 19;
    const readiness = new Readiness({
      expected: 19,
      current: async () => {
        if (version instanceof Error) throw version;
        return version;
      },
    });
    expect(readiness.lastStatus).toBeUndefined();
    expect((await readiness.check()).status).toBe("ready");
    expect(readiness.lastStatus).toBe("ready");
    version = new Error("connect ECONNREFUSED");
    expect((await readiness.check()).status).toBe("database_unavailable");
    expect(readiness.lastStatus).toBe("database_unavailable");
    version = 18;
    expect((await readiness.check()).status).toBe("migrations_pending");
    expect(readiness.lastStatus).toBe("migrations_pending");
  });

  it("stays shutting_down once stopServing is called, whatever a probe under way answers later", async () => {
    let answer: (version: number) => void = () => {};
    const readiness = new Readiness({
      expected: 19,
      current: () =>
        new Promise<number>((resolve) => {
          answer = resolve;
        }),
    });
    const probe = readiness.check();
    readiness.stopServing();
    expect(readiness.lastStatus).toBe("shutting_down");
    answer(19);
    expect((await probe).status).toBe("ready");
    expect(readiness.lastStatus).toBe("shutting_down");
    expect((await readiness.check()).status).toBe("shutting_down");
  });
});
