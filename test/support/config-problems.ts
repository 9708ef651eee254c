/** What loadConfig says is wrong with a set of settings: its problems, or [] when it accepts them. */
import { ConfigError, loadConfig } from "../../src/platform/config.js";

export function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}
