/**
 * How each bare baseline server (baseline-server.ts, baseline-http2.ts) starts and stops: it listens on PORT (0:
 * any) at 127.0.0.1, says its port as one JSON line on stdout (what startChild reads), and closes on SIGTERM.
 */
import type { AddressInfo } from "node:net";

interface Listener {
  listen(port: number, host: string, listening: () => void): unknown;
  address(): AddressInfo | string | null;
  close(closed: () => void): unknown;
}

export function listenAndSayPort(server: Listener): void {
  server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
    const address = server.address();
    process.stdout.write(`${JSON.stringify({ port: typeof address === "object" && address ? address.port : 0 })}\n`);
  });
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
}
