// bodyIfComplete: a body that is all buffered is taken at once, whether or not its end has been pushed yet;
// anything else is left to the stream reader.
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { bodyIfComplete } from "../../src/platform/transport/http.js";

const tooLarge = () => new Error("too large");

/** A paused stream holding `chunks`, ended (like a request whose message is complete) or not. */
function bodyOf(chunks: readonly string[], ended: boolean): Readable & { complete?: boolean } {
  const stream: Readable & { complete?: boolean } = new Readable({ read() {} });
  for (const chunk of chunks) stream.push(Buffer.from(chunk));
  if (ended) {
    stream.push(null);
    stream.complete = true;
  }
  return stream;
}

describe("bodyIfComplete", () => {
  it("takes a body whose end has been pushed", () => {
    const body = bodyOf(['{"numUsers":', "10}"], true);
    expect(bodyIfComplete(body, 1024, tooLarge)?.toString()).toBe('{"numUsers":10}');
  });

  it("takes a body that is all there by its Content-Length before its end, and the stream still ends", async () => {
    const body = bodyOf(['{"numUsers":10}'], false);
    expect(bodyIfComplete(body, 1024, tooLarge, "15")?.toString()).toBe('{"numUsers":10}');
    const ended = new Promise<string>((resolve) => body.once("end", () => resolve("end")));
    body.push(null);
    await expect(ended).resolves.toBe("end");
  });

  it("leaves a body that is only partly there, or has no declared length, to the reader", () => {
    expect(bodyIfComplete(bodyOf(['{"numUsers":'], false), 1024, tooLarge, "15")).toBeUndefined();
    expect(bodyIfComplete(bodyOf(['{"numUsers":10}'], false), 1024, tooLarge)).toBeUndefined();
    expect(bodyIfComplete(bodyOf([], false), 1024, tooLarge, "0")).toBeUndefined();
  });

  it("leaves a stream that something already reads alone", () => {
    const body = bodyOf(['{"numUsers":10}'], true);
    body.resume();
    expect(bodyIfComplete(body, 1024, tooLarge)).toBeUndefined();
  });

  it("refuses a whole body over the limit, as the reader would", () => {
    expect(() => bodyIfComplete(bodyOf(["x".repeat(20)], false), 10, tooLarge, "20")).toThrow("too large");
    expect(() => bodyIfComplete(bodyOf(["x".repeat(20)], true), 10, tooLarge)).toThrow("too large");
  });

  it("gives an empty buffer for an ended empty body", () => {
    expect(bodyIfComplete(bodyOf([], true), 1024, tooLarge)?.length).toBe(0);
  });
});
