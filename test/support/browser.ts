/**
 * Debian's Chromium for the browser tests (driven by playwright-core), started the same way by each, and what
 * the overlay page shows in it.
 */
import type { Frame, Page } from "playwright-core";
import { withoutMovedClock } from "./moved-clock.js";
import { until } from "./polling.js";

export const CHROMIUM = "/usr/bin/chromium";

/** Chromium's environment: without libfaketime, which it does not survive; pages take their time from the server. */
export const CHROMIUM_ENV = withoutMovedClock();

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

/** The overlay's rows as the texts of their cells: rank, name, total and, with `withPrize` (a race), the prize. */
export function overlayRows(page: Page, withPrize = false) {
  return page.$$eval(
    ".row",
    (list, prize) =>
      list.map((row) => [
        row.querySelector(".rank")?.textContent,
        row.querySelector(".name")?.textContent,
        row.querySelector(".total")?.textContent,
        ...(prize ? [row.querySelector(".prize")?.textContent] : []),
      ]),
    withPrize,
  );
}

/** The overlay's rows once it shows `count` of them (failing after 5 s with what it showed). */
export function rowsWhenShown(page: Page, count: number, withPrize = false) {
  return until(
    `${count} rows`,
    () => overlayRows(page, withPrize),
    (rows) => rows.length === count,
  );
}

/**
 * The overlay framed by `host` (a page whose frame loads /board), once the frame is there and what `read` reads in it
 * passes `ok` (each wait failing after 5 s with `what` and what it saw).
 */
export async function framedOverlay<T>(
  host: Page,
  what: string,
  read: (overlay: Frame) => Promise<T>,
  ok: (value: T) => boolean,
): Promise<Frame> {
  const overlay = await until(
    "the framed overlay",
    async () => host.frame({ url: /\/board\?/ }),
    (frame) => frame !== null,
  );
  if (overlay === null) throw new Error("no framed overlay");
  await until(what, () => read(overlay), ok);
  return overlay;
}
