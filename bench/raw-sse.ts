/** The viewers' benches' SSE client: a stream read over a raw socket, with nothing but node:net loaded. */
import net from "node:net";

/**
 * An SSE stream read over a raw HTTP/1.1 socket, no client library in the way (the viewers' benches open thousands):
 * `onHead(ok)` once the response's head has come (a status other than 200 also destroys the socket), then `onText`
 * with each piece of the chunked body ("<hex>\r\n<bytes>\r\n" per write) as text. The socket, for its close and
 * error handlers.
 */
export function rawSseStream(
  baseUrl: string,
  path: string,
  key: string,
  onHead: (ok: boolean) => void,
  onText: (text: string) => void,
): net.Socket {
  const url = new URL(baseUrl);
  const socket = net.connect({ port: Number(url.port), host: url.hostname });
  let head = true;
  let buffer: Buffer = Buffer.alloc(0);
  socket.setNoDelay(true);
  socket.write(
    `GET ${path} HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${key}\r\naccept: text/event-stream\r\n\r\n`,
  );
  socket.on("data", (chunk: Buffer) => {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    if (head) {
      const end = buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const ok = buffer.subarray(0, 12).toString("latin1") === "HTTP/1.1 200";
      head = false;
      buffer = buffer.subarray(end + 4);
      onHead(ok);
      if (!ok) {
        socket.destroy();
        return;
      }
    }
    for (;;) {
      const line = buffer.indexOf("\r\n");
      if (line < 0) break;
      const size = Number.parseInt(buffer.subarray(0, line).toString("latin1"), 16);
      if (buffer.length < line + 2 + size + 2) break;
      const text = buffer.subarray(line + 2, line + 2 + size).toString("utf8");
      buffer = buffer.subarray(line + 4 + size);
      onText(text);
    }
  });
  return socket;
}
