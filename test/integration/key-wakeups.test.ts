/**
 * A key change made through the ApiKeyService on one instance wakes the others
 * through Redis (the change feed's wake-ups): with the feed polled only every
 * 30 s, instance B still accepts a new key and refuses a revoked one within a
 * second of instance A answering. Two in-process instances on one database,
 * real Redis (127.0.0.1:6379), real sockets.
 */
import { createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ApiKeyService } from "../../gen/topwagers/v1/api_keys_pb.js";
import { bearerConnect } from "../support/calls.js";
import { JANUARY } from "../support/dates.js";
import { useStarted } from "../support/lifecycle.js";
import { OPERATION } from "../support/rest.js";
import { FLEET_ADMIN_TOKEN, startWakingFleet } from "../support/waking-fleet.js";

const fleet = useStarted(
  () => startWakingFleet("key_wakeups", 2, 0, { CHANGE_FEED_POLL_MS: "30000", CHANGE_FEED_MAX_LAG_MS: "60000" }),
  (started) => started.close(),
);

async function post(base: string, secret: string): Promise<number> {
  const response = await fetch(`${base}${OPERATION}`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify(JANUARY),
  });
  await response.arrayBuffer();
  return response.status;
}

/** Milliseconds until `base` answers `status` for the key (polling every 20 ms), or Infinity after 5 s. */
async function msUntil(base: string, secret: string, status: number): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < 5_000) {
    if ((await post(base, secret)) === status) return performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return Number.POSITIVE_INFINITY;
}

describe("key changes wake the other instances", () => {
  it("B accepts a key issued on A, and refuses it once revoked on A, each within 1 s although B polls every 30 s", async () => {
    const admin = createClient(ApiKeyService, bearerConnect(fleet.internalUrl, FLEET_ADMIN_TOKEN));
    const created = await admin.createApiKey({ affiliateId: "aff-wake" });
    const accepted = await msUntil(fleet.urls[1] as string, created.secret, 200);
    expect(accepted).toBeLessThan(1_000);
    await admin.revokeApiKey({ id: created.apiKey?.id ?? "" });
    const refused = await msUntil(fleet.urls[1] as string, created.secret, 401);
    expect(refused).toBeLessThan(1_000);
  });
});
