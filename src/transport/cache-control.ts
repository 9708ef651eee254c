/**
 * Cache-Control for a leaderboard answer: a caller may reuse it as long as our
 * own result cache would; with the cache off, answers are not to be stored.
 */
export function cacheControl(maxAgeSeconds: number): string {
  if (maxAgeSeconds <= 0) return "no-store";
  // Made once per age: every cache hit sends one of a few values.
  let text = byAge.get(maxAgeSeconds);
  if (text === undefined) {
    text = `private, max-age=${maxAgeSeconds}`;
    if (byAge.size < MAX_AGES) byAge.set(maxAgeSeconds, text);
  }
  return text;
}

/** Ages kept (a client age is at most a few minutes, so a few hundred values at most). */
const MAX_AGES = 4096;
const byAge = new Map<number, string>();
