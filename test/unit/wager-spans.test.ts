/**
 * The change row of a wager batch (ingest/sql/data-changes.ts): affiliates, spans and the changed users,
 * readable by the version before users were listed (rolling deploys) and reading that version's rows.
 */
import { describe, expect, it } from "vitest";
import { MAX_LISTED_USERS, parseWagerSpans, wagerSpansText } from "../../src/ingest/sql/data-changes.js";

describe("wager_spans with changed users", () => {
  it("lists each affiliate's span and its users in ascending order, once each", () => {
    const text = wagerSpansText([
      { affiliateId: 7, placedAt: 200, userId: 31 },
      { affiliateId: 7, placedAt: 100, userId: 4 },
      { affiliateId: 9, placedAt: 150, userId: 12 },
      { affiliateId: 7, placedAt: 150, userId: 31 },
    ]);
    expect(text).toBe("7,100,200,4,31;9,150,150,12");
    expect(parseWagerSpans(text)).toEqual([
      { affiliateId: 7, firstAt: 100, lastAt: 200, userIds: [4, 31] },
      { affiliateId: 9, firstAt: 150, lastAt: 150, userIds: [12] },
    ]);
  });

  it("is read by the previous reader (the first three fields of a piece) as the same spans", () => {
    const previousReader = (text: string) =>
      text.split(";").map((piece) => {
        const [affiliate, first, last] = piece.split(",").map(Number);
        return [affiliate, first, last];
      });
    expect(previousReader("7,100,200,4,31;9,150,150,12")).toEqual([
      [7, 100, 200],
      [9, 150, 150],
    ]);
  });

  it("says the users are not known for rows of the previous writer, the bulk loader and very large batches", () => {
    expect(parseWagerSpans("7,100,200")).toEqual([{ affiliateId: 7, firstAt: 100, lastAt: 200 }]);
    expect(
      wagerSpansText([
        { affiliateId: 3, placedAt: 5 },
        { affiliateId: 3, placedAt: 6, userId: 1 },
      ]),
    ).toBe("3,5,6");
    const many = Array.from({ length: MAX_LISTED_USERS + 1 }, (_, i) => ({
      affiliateId: 2,
      placedAt: 9,
      userId: i + 1,
    }));
    expect(wagerSpansText(many)).toBe("2,9,9");
    expect(parseWagerSpans("7,100,200,4,x")).toEqual([{ affiliateId: 7, firstAt: 100, lastAt: 200 }]);
    expect(wagerSpansText([])).toBe("");
  });
});
