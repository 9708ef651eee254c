/**
 * A step run again and again (jobs/every.ts), as a core that does work in the background takes it: the webhook
 * delivery worker claims due deliveries on one.
 */

/** A running loop: `wake` runs the next step now (or as soon as the one under way ends); `stop` ends it. */
export interface Repeating {
  wake(): void;
  /** No step after the one under way; resolves once it has ended. */
  stop(): Promise<void>;
}

/**
 * Starts running `step` at once, then `ms` after each step ended, or after the delay a step returns (0: at once).
 */
export type Schedule = (ms: number, step: () => Promise<number>) => Repeating;
