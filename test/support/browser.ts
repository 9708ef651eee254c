/** Debian's Chromium for the browser tests (driven by playwright-core), started the same way by each. */
export const CHROMIUM = "/usr/bin/chromium";

/** Headless, sandbox off (root in CI), and nothing that would reach the network by itself. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
