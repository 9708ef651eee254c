/**
 * The board behind docs/openapi.yaml's first example (the top of the second half of November 2026), for the tests
 * that check a real answer against the documents: the names and totals of the example, test avatars.
 */
import type { Database } from "../../src/platform/database/database.js";
import { DEC_1, NOV_16 } from "./dates.js";
import { addBoard } from "./fixtures.js";

export const NOVA_AVATAR = "https://avatars.example.test/nova.png";
export const BLAZE_AVATAR = "https://avatars.example.test/blaze.png";

/**
 * For `affiliate`, within November 16th to 30th: nova_1023 15000.5 (its second wager in the half-month's last
 * second), ace_1443 12000.75 without an avatar, blaze_1009 0.00000001; blaze's second wager, in the first second of
 * December, is not in the half-month.
 */
export async function addHalfMonthExample(db: Database, affiliate: string): Promise<void> {
  await addBoard(db, affiliate, [
    ["u-1", "nova_1023", NOVA_AVATAR, ["15000.25", NOV_16], ["0.25", DEC_1 - 1]],
    ["u-2", "ace_1443", "", ["12000.75", NOV_16 + 3600]],
    ["u-3", "blaze_1009", BLAZE_AVATAR, ["0.00000001", NOV_16 + 7200], ["99", DEC_1]],
  ]);
}
