/** Listening on port 0: the system picks a free port, and the test reads which. */
import type net from "node:net";

/** Listens on 127.0.0.1 port 0 and returns the port it got. */
export async function listenOnFreePort(server: net.Server): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (typeof address !== "object" || address === null) throw new Error("the server has no TCP address");
  return address.port;
}
