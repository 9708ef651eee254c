/**
 * The fleet's first result signing key as a start-up step (servers sign by default: services/signing.ts
 * makeFirstResultKey makes one when none is active): tried once at the server's start, before the race clock runs,
 * so that the first freeze is signed and the key is published long before; when the database does not answer then
 * (a server may start before it does, or before its schema is migrated: MIGRATE_ON_START=false), tried again every
 * 10 s until it answers, one warn line said.
 */
import type { Logger } from "../platform/logger.js";
import { every, type Repeating } from "./every.js";

const RETRY_MS = 10_000;

/** Runs `make` now; on failure, again every RETRY_MS until it succeeds. The retrying job, or undefined when done. */
export async function startFirstSigningKey(make: () => Promise<void>, logger: Logger): Promise<Repeating | undefined> {
  try {
    await make();
    return undefined;
  } catch (error) {
    logger.warn(
      { err: error },
      "the result signing key could not be checked or made at start (the database did not answer, or is not migrated yet): tried again every 10 s",
    );
  }
  let done = false;
  const job = every(
    RETRY_MS,
    async () => {
      if (done) return;
      await make();
      done = true;
      void job.stop();
    },
    { first: "after" },
  );
  return job;
}
