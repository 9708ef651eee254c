/**
 * A race's documented limits (issue 48, item 2), over Connect JSON on the public port with the retention horizons
 * recorded 30 days back (as a pruning run records them): a race spans at most 400 days, a race that has not ended
 * starts at or after its affiliate's horizon (an affiliate held back by a race of its own may start from its hold),
 * a changed period is held to the same, and a race made as history (`allowPast`) over a pruned period is refused
 * with BEYOND_RETENTION while one of whole days before the horizon (answered by the daily totals, never pruned) is
 * made. Each refusal is 400 with the exact body.
 */
import { describe, expect, it } from "vitest";
import { createKey } from "../support/fixtures.js";
import { type RestReply, restCall } from "../support/rest.js";
import { useTestServer } from "../support/server.js";

const server = useTestServer("race_retention_limits");

const DAY = 86_400;
const NOW = Math.floor(Date.now() / 1000);
const HORIZON = NOW - (NOW % DAY) - 30 * DAY;
const ISO = new Date(HORIZON * 1000).toISOString().slice(0, 10);
const MAX_SPAN = 400 * DAY;

function call(key: string, method: string, body: unknown): Promise<RestReply> {
  return restCall(`${server.baseUrl}/topwagers.v1.RaceService/${method}`, { key, body });
}

/** The Connect JSON error body: code, message, and the BadRequest's or ErrorInfo's readable part. */
function refusal(reply: RestReply) {
  const body = reply.json as { code: string; message: string; details?: { type: string; debug?: unknown }[] };
  return [reply.status, body.code, body.message, (body.details ?? []).map((d) => [d.type, d.debug])];
}

function violation(field: string, description: string) {
  return [
    400,
    "invalid_argument",
    description,
    [
      ["google.rpc.ErrorInfo", { reason: "INVALID_ARGUMENT", domain: "topwagers" }],
      ["google.rpc.BadRequest", { fieldViolations: [{ field, description }] }],
    ],
  ];
}

const rules = (slug: string, start: number, end: number) => ({
  slug,
  title: slug,
  startTimestamp: String(start),
  endTimestamp: String(end),
});

describe("a race's limits", () => {
  it("refuse a span over 400 days naming endTimestamp and the last second allowed", async () => {
    const { secret } = await createKey(server.database.db, "aff-limits-span");
    const start = NOW + 3_600;
    const over = await call(secret, "CreateRace", { rules: rules("long", start, start + MAX_SPAN) });
    expect(refusal(over)).toEqual(
      violation(
        "rules.end_timestamp",
        `endTimestamp must be at most ${start + MAX_SPAN - 1}: a race spans at most 400 days (34560000 seconds, both ends inclusive)`,
      ),
    );
    expect((await call(secret, "CreateRace", { rules: rules("long", start, start + MAX_SPAN - 1) })).status).toBe(200);
  });

  it("refuse a start before the retention horizon; a held affiliate starts from its hold", async () => {
    const db = server.database.db.write;
    await db.query("UPDATE retention_horizons SET horizon = ?, moved_at = ?", [HORIZON, NOW]);
    const free = await createKey(server.database.db, "aff-limits-free");
    const heldKey = await createKey(server.database.db, "aff-limits-held");
    const message = `startTimestamp must be at or after the retention horizon ${ISO} UTC (Unix time ${HORIZON}): wagers before it may already be deleted, so a race cannot count them`;
    const early = await call(free.secret, "CreateRace", { rules: rules("early", HORIZON - 1, NOW + DAY) });
    expect(refusal(early)).toEqual(violation("rules.start_timestamp", message));
    const onTime = await call(free.secret, "CreateRace", { rules: rules("early", HORIZON, NOW + DAY) });
    expect(onTime.status).toBe(200);

    // A scheduled race moved to start before the horizon: refused the same way, and left as it was.
    const later = await call(free.secret, "CreateRace", { rules: rules("later", NOW + DAY, NOW + 2 * DAY) });
    const id = (later.json as { race: { id: string } }).race.id;
    const moved = await call(free.secret, "UpdateRace", { id, startTimestamp: String(HORIZON - 3_600) });
    expect(refusal(moved)).toEqual(violation("start_timestamp", message));
    const read = await call(free.secret, "GetRace", { idOrSlug: id });
    expect((read.json as { race: { startsAt: string } }).race.startsAt).toBe(String(NOW + DAY));

    // An affiliate held back from ten days before the horizon by a race of its own may start a race from there.
    const [affiliate] = (await db.query("SELECT id FROM affiliates WHERE external_id = 'aff-limits-held'")) as [
      { id: number }[],
      unknown,
    ];
    await db.query("INSERT INTO retention_holds (affiliate_id, held_from, moved_at) VALUES (?, ?, ?)", [
      affiliate[0]?.id,
      HORIZON - 10 * DAY,
      NOW,
    ]);
    const heldStart = await call(heldKey.secret, "CreateRace", { rules: rules("held", HORIZON - 10 * DAY, NOW + DAY) });
    expect(heldStart.status).toBe(200);
    const heldEarly = await call(heldKey.secret, "CreateRace", {
      rules: rules("held-early", HORIZON - 10 * DAY - 1, NOW + DAY),
    });
    const heldMessage = `startTimestamp must be at or after the retention horizon ${new Date((HORIZON - 10 * DAY) * 1000).toISOString().slice(0, 10)} UTC (Unix time ${HORIZON - 10 * DAY}): wagers before it may already be deleted, so a race cannot count them`;
    expect(refusal(heldEarly)).toEqual(violation("rules.start_timestamp", heldMessage));
  });

  it("refuse a race made as history over a pruned period with BEYOND_RETENTION; whole days before it are made", async () => {
    const { secret } = await createKey(server.database.db, "aff-limits-history");
    await server.database.db.write.query("UPDATE retention_horizons SET horizon = ?, moved_at = ?", [HORIZON, NOW]);
    const start = HORIZON - 10 * DAY + 37_800; // 10.30 UTC, ten days before the horizon
    const pruned = await call(secret, "CreateRace", {
      rules: rules("past", start, HORIZON - 5 * DAY),
      allowPast: true,
    });
    expect(refusal(pruned)).toEqual([
      400,
      "out_of_range",
      `this period needs raw wagers from before the retention horizon ${ISO} UTC (Unix time ${HORIZON}) and those were deleted. Before the horizon a period must start and end on whole UTC days`,
      [
        [
          "google.rpc.ErrorInfo",
          {
            reason: "BEYOND_RETENTION",
            domain: "topwagers",
            metadata: { kind: "wagers", horizon: String(HORIZON) },
          },
        ],
      ],
    ]);
    const days = await call(secret, "CreateRace", {
      rules: rules("past", HORIZON - 10 * DAY, HORIZON - 5 * DAY - 1),
      allowPast: true,
    });
    expect([days.status, (days.json as { race: { state: string } }).race.state]).toEqual([200, "RACE_STATE_REVIEWING"]);
  });
});
