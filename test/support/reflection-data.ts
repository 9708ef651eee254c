/**
 * The data and expectations shared by the health-and-reflection tests (in-process) and the
 * `buf curl` reflection tests (a spawned binary): one affiliate with two users in January 2025.
 */
import type { Database } from "../../src/platform/database/database.js";
import { FEB_1_2025, JAN_1_2025 } from "./dates.js";
import { addBoard, createKey } from "./fixtures.js";

/** What reflection and health list on the public port, written out here. */
export const SERVICES = [
  "topwagers.v1.TopWagersService",
  "topwagers.v1.RaceService",
  "topwagers.v1.WebhookService",
  "topwagers.v1.SigningKeyService",
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
];

/** Adds the affiliate `aff-hr`, its users alice and bob and their wagers; returns the affiliate's key. */
export async function addReflectionData(db: Database): Promise<string> {
  const key = (await createKey(db, "aff-hr")).secret;
  await addBoard(db, "aff-hr", [
    ["u-1", "alice", "https://img.example/alice.png", ["1.00000001", JAN_1_2025], ["2.5", FEB_1_2025 - 1]],
    ["u-2", "bob", "", ["15000.5", JAN_1_2025 + 1]],
  ]);
  return key;
}
