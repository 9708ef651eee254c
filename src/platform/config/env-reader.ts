/**
 * Reading the environment: each variable with its fallback and bounds, every problem collected (never thrown one
 * at a time), and passwords hidden before a URL is printed. The settings of each area are read in the files
 * beside this one; ../config.ts puts them together.
 */

export type Env = Readonly<Record<string, string | undefined>>;

/** Reads variables of one environment, each with its fallback, and collects what is wrong with them. */
export class EnvReader {
  readonly problems: string[] = [];

  constructor(private readonly env: Env) {}

  problem(message: string): void {
    this.problems.push(message);
  }

  /** The variable's value; the fallback when it is unset or "". */
  text(name: string, fallback: string): string {
    const value = this.env[name];
    return value === undefined || value === "" ? fallback : value;
  }

  /** The variable's value; undefined when it is unset or "". */
  optional(name: string): string | undefined {
    return this.text(name, "") || undefined;
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.env[name];
    if (raw === undefined || raw === "") return fallback;
    if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
      this.problem(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return Number(raw);
  }

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.text(name, String(fallback));
    if (raw !== "true" && raw !== "false") this.problem(`${name} must be true or false, got "${raw}"`);
    return raw === "true" || (raw !== "false" && fallback);
  }

  /** A URL of one of the protocols (written "redis:"); undefined when unset and without fallback. */
  url(name: string, fallback: string | undefined, protocols: readonly string[]): string | undefined {
    const raw = this.text(name, fallback ?? "");
    if (raw === "") return undefined;
    try {
      const parsed = new URL(raw);
      if (!protocols.includes(parsed.protocol)) {
        this.problem(`${name} must be a ${protocols.join(" or ")} URL, got "${redact(raw)}"`);
      }
    } catch {
      this.problem(`${name} is not a valid URL: "${redact(raw)}"`);
    }
    return raw;
  }
}

/** Hides a password in a URL before it is printed. */
export function redact(rawUrl: string): string {
  if (rawUrl.includes(",")) return rawUrl.split(",").map(redact).join(",");
  try {
    const parsed = new URL(rawUrl);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.toString();
  } catch {
    return rawUrl.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
  }
}
