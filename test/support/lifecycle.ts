/**
 * Set-up shared by test files: something started in beforeAll and stopped in afterAll of the
 * enclosing describe (or file), used through a stand-in that forwards to it once it is started.
 */
import { afterAll, beforeAll } from "vitest";

export function useStarted<T extends object>(start: () => Promise<T>, stop: (started: T) => Promise<void>): T {
  let started: T | undefined;
  beforeAll(async () => {
    started = await start();
  });
  afterAll(async () => {
    if (started !== undefined) await stop(started);
  });
  return new Proxy({} as T, {
    get(_, property) {
      if (started === undefined) throw new Error("used before its beforeAll ran (or after it failed)");
      const value: unknown = Reflect.get(started, property);
      return typeof value === "function" ? value.bind(started) : value;
    },
  });
}

/**
 * In afterAll: closes what the tests opened along the way (streams, clients), aborts their HTTP/2 sessions, then
 * closes the server, in that order (the server's close waits for every connection to be gone).
 */
export function closeAfterAll(
  opened: readonly { close(): void }[],
  sessions: readonly { abort(): void }[],
  server: () => { close(): Promise<void> } | undefined,
): void {
  afterAll(async () => {
    for (const item of opened) item.close();
    for (const session of sessions) session.abort();
    await server()?.close();
  });
}
