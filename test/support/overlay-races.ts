/**
 * A race as the overlay's tests send it (the race JSON of docs/api.md at the server's `now`), for the stand-in
 * streams of race-overlay.test.ts and race-overlay-states.test.ts.
 */
export const ENDS_AT = 1796083199;
export const DIGEST = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/** The race as the contract shows it, at the server's `now`. */
export function overlayRace(state: string, now: number, extra: Record<string, unknown> = {}) {
  return {
    id: "race_abcdefghijklmnopqrst",
    slug: "monthly",
    title: "$10,000 monthly race",
    state,
    startTimestamp: 1793491200,
    endTimestamp: ENDS_AT,
    rankBy: "wagered",
    currency: "USD",
    prizes: ["5000.00", "3000.00", "2000.00"],
    minWagered: "0",
    shown: 4,
    reviewSeconds: 86400,
    repeat: "monthly",
    timeZone: "America/New_York",
    startsAt: 1793491200,
    endsAt: ENDS_AT,
    finalAt: ENDS_AT + 86400,
    now,
    next: { id: "race_bcdefghijklmnopqrstu", startsAt: ENDS_AT + 1 },
    entries: [
      {
        rank: 1,
        username: "blaze_1007",
        avatar: "",
        totalWagered: 91234.5,
        totalWageredDecimal: "91234.5",
        prize: "5000.00",
      },
      { rank: 2, username: "nova_1014", avatar: "", totalWagered: 500, totalWageredDecimal: "500", prize: "2500.00" },
      {
        rank: 2,
        username: "rex_1021",
        avatar: "",
        totalWagered: 500,
        totalWageredDecimal: "500.000",
        prize: "2500.00",
      },
      { rank: 4, username: "kai_1500", avatar: "", totalWagered: 12.345, totalWageredDecimal: "12.345", prize: "0.00" },
    ],
    unallocated: "0.00",
    version: `v-${state}-${now}`,
    result: null,
    ...extra,
  };
}
