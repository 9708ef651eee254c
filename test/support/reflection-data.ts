/**
 * The data and expectations shared by the health-and-reflection tests (in-process) and the
 * `buf curl` reflection tests (a spawned binary): one affiliate with two users in January 2025.
 */
import type { Database } from "../../src/storage/database.js";
import { FEB_1_2025, JAN_1_2025 } from "./dates.js";
import { addUsers, addWagers, createKey, wager } from "./fixtures.js";

/** What reflection and health list on the public port, written out here. */
export const SERVICES = [
  "topwagers.v1.TopWagersService",
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
];

/** Adds the affiliate `aff-hr`, its users alice and bob and their wagers; returns the affiliate's key. */
export async function addReflectionData(db: Database): Promise<string> {
  const key = (await createKey(db, "aff-hr")).secret;
  await addUsers(db, [
    { id: "u-1", affiliateId: "aff-hr", username: "alice", avatar: "https://img.example/alice.png" },
    { id: "u-2", affiliateId: "aff-hr", username: "bob", avatar: "" },
  ]);
  await addWagers(db, [
    wager("u-1", "1.00000001", JAN_1_2025),
    wager("u-1", "2.5", FEB_1_2025 - 1),
    wager("u-2", "15000.5", JAN_1_2025 + 1),
  ]);
  return key;
}
