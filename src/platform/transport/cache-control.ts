/**
 * Cache-Control for a leaderboard answer: a caller may reuse it as long as our own result cache would; with the
 * cache off, answers are not to be stored.
 */
export function cacheControl(maxAgeSeconds: number): string {
  return maxAgeSeconds <= 0 ? "no-store" : `private, max-age=${maxAgeSeconds}`;
}
