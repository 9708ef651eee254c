/**
 * Counts and times the statements a pool runs while `counting` is on, by kind (the statement's text with its
 * column list left out: `SELECT … FROM races r JOIN …`), so a scenario can say how many round trips one unit
 * of its work costs and where their time goes. Every statement of the pool and of its checked-out connections
 * passes through src/platform/compat/mysql2.ts wrapStatements, transaction control (START TRANSACTION, COMMIT) included.
 */
import type { Pool } from "mysql2/promise";
import { wrapStatements } from "../src/platform/compat/mysql2.js";
import { fmt } from "./support.js";

interface Tally {
  count: number;
  ms: number;
}

export class StatementTally {
  counting = false;
  private readonly kinds = new Map<string, Tally>();

  constructor(pool: Pool) {
    wrapStatements(pool, async (sql, run) => {
      if (!this.counting) return run();
      const started = performance.now();
      try {
        return await run();
      } finally {
        const kind = kindOf(sql());
        const tally = this.kinds.get(kind) ?? { count: 0, ms: 0 };
        tally.count += 1;
        tally.ms += performance.now() - started;
        this.kinds.set(kind, tally);
      }
    });
  }

  /** Statements in all, per unit of work (`units`: races frozen, say). */
  total(units: number): { readonly count: number; readonly ms: number } {
    let count = 0;
    let ms = 0;
    for (const tally of this.kinds.values()) {
      count += tally.count;
      ms += tally.ms;
    }
    return { count: count / units, ms: ms / units };
  }

  /** One row per kind, the slowest first: kind, statements per unit, ms per unit (wall time while waiting). */
  rows(units: number): string[][] {
    return [...this.kinds.entries()]
      .sort(([, a], [, b]) => b.ms - a.ms)
      .map(([kind, tally]) => [`\`${kind}\``, fmt(tally.count / units, 2), fmt(tally.ms / units, 2)]);
  }
}

/** The statement's text on one line without backticks, a SELECT's column list left out, cut at 90 characters. */
function kindOf(sql: string): string {
  const line = sql.replace(/\s+/g, " ").replaceAll("`", "").trim();
  const from = line.indexOf(" FROM ");
  const short = line.startsWith("SELECT ") && from > 0 ? `SELECT … ${line.slice(from + 1)}` : line;
  return short.length > 90 ? `${short.slice(0, 89)}…` : short;
}
