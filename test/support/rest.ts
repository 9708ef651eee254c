/**
 * The REST helpers: calls with fetch, node:http and raw sockets, the reply shapes, and the error
 * envelope. Test files aim them at their own server (test/support/rest-contract.ts aims them at the
 * contract's server by default).
 */
import http from "node:http";
import net from "node:net";
import { Code } from "@connectrpc/connect";
import { JANUARY } from "./dates.js";

export const OPERATION = "/top-affiliate-wagers-by-period";

export interface RestReply {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
  readonly json: unknown;
}

export function recordOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

function parseOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export interface RestCallOptions {
  method?: string;
  /** Sent as `Authorization: Bearer <key>`; null or absent: no Authorization. */
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** One call with fetch. `body` is sent as given when it is a string, else as JSON (with Content-Type JSON). */
export async function restCall(url: string, options: RestCallOptions = {}): Promise<RestReply> {
  const headers: Record<string, string> = {};
  if (options.key != null) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
    headers["content-type"] = "application/json";
  }
  Object.assign(headers, options.headers ?? {});
  const response = await fetch(url, {
    method: options.method ?? "POST",
    headers,
    ...(body === undefined ? {} : { body }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  const text = await response.text();
  return { status: response.status, headers: recordOf(response.headers), text, json: parseOrText(text) };
}

/** POST the operation with fetch; `key` null sends no Authorization. */
export function restTop(
  baseUrl: string,
  key: string | null,
  body: unknown = JANUARY,
  signal?: AbortSignal,
): Promise<RestReply> {
  return restCall(`${baseUrl}${OPERATION}`, { key, body, ...(signal === undefined ? {} : { signal }) });
}

/** The snake_case name of a Connect code ("resource_exhausted"), as the REST envelope uses it. */
export function codeName(code: Code | 0): string {
  if (code === 0) return "ok";
  return Code[code].replace(/[A-Z]/g, (c, i: number) => (i === 0 ? c.toLowerCase() : `_${c.toLowerCase()}`));
}

/**
 * Problems with a REST body as the contract's envelope, or [] when it is one:
 * exactly the keys `data` and `errors`; on 2xx an array and `null`; otherwise
 * `null` and a non-empty list of `{code, message[, field]}` with snake_case codes.
 */
export function envelopeProblems(status: number, json: unknown): string[] {
  if (typeof json !== "object" || json === null || Array.isArray(json))
    return [`body is not a JSON object: ${String(json).slice(0, 200)}`];
  const keys = Object.keys(json).sort();
  if (keys.join(",") !== "data,errors") return [`keys are ${keys.join(",")}`];
  const { data, errors } = json as { data: unknown; errors: unknown };
  if (status >= 200 && status < 300) {
    if (!Array.isArray(data)) return ["2xx data is not an array"];
    if (errors !== null) return ["2xx errors is not null"];
    return [];
  }
  const problems: string[] = [];
  if (data !== null) problems.push("error data is not null");
  if (!Array.isArray(errors) || errors.length === 0) return [...problems, "errors is not a non-empty array"];
  for (const item of errors as unknown[]) {
    if (typeof item !== "object" || item === null) {
      problems.push("error item is not an object");
      continue;
    }
    const { code, message, field, ...rest } = item as Record<string, unknown>;
    if (typeof code !== "string" || !/^[a-z]+(_[a-z]+)*$/.test(code)) problems.push(`bad code ${String(code)}`);
    if (typeof message !== "string" || message === "") problems.push("empty message");
    if (field !== undefined && typeof field !== "string") problems.push("field is not a string");
    if (Object.keys(rest).length > 0) problems.push(`extra item keys ${Object.keys(rest).join(",")}`);
  }
  return problems;
}

export interface ErrorItem {
  code: string;
  message: string;
  field?: string;
}

/** The REST error envelope with these items. */
export function errorBody(...items: ErrorItem[]): { data: null; errors: ErrorItem[] } {
  return { data: null, errors: items };
}

export function invalid(message: string, field?: string): ErrorItem {
  return field === undefined ? { code: "invalid_argument", message } : { code: "invalid_argument", message, field };
}

export interface NodeReply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface HttpRequestOptions {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  chunks?: readonly Buffer[];
  /** With `chunks`: never end the body, like a client still uploading; the connection is dropped after the response. */
  unfinished?: boolean;
  /** The client's address (any 127.x.y.z on Linux). */
  localAddress?: string;
}

/**
 * One call with node:http to 127.0.0.1:port on its own connection: only the headers given are
 * sent (plus Host and Connection), header names exactly as written, the body as one piece with a
 * Content-Length or as chunks without one (chunked).
 */
export function httpRequest(port: number, options: HttpRequestOptions): Promise<NodeReply> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: "127.0.0.1",
        port,
        method: options.method ?? "POST",
        path: options.path,
        agent: false,
        ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          if (options.unfinished === true) request.destroy();
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) });
        });
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    for (const [name, value] of Object.entries(options.headers ?? {})) request.setHeader(name, value);
    if (options.body !== undefined) {
      request.setHeader("Content-Length", Buffer.byteLength(options.body));
      request.end(options.body);
    } else if (options.chunks !== undefined) {
      for (const chunk of options.chunks) request.write(chunk);
      if (options.unfinished !== true) request.end();
    } else {
      request.end();
    }
  });
}

export interface RawReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** Writes the bytes as given on a fresh socket and reads the response until the server closes it. */
export function rawExchange(request: string, port: number): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.setTimeout(5_000, () => socket.destroy(new Error("no complete response within 5 s")));
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const headerEnd = raw.indexOf("\r\n\r\n");
      if (headerEnd < 0) return reject(new Error(`no response head in ${JSON.stringify(raw)}`));
      const [statusLine = "", ...lines] = raw.slice(0, headerEnd).split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body: raw.slice(headerEnd + 4) });
    });
    socket.write(request);
  });
}

/** What V8 says about text that is not JSON; the server quotes it in its message. */
export function jsonParseMessage(text: string): string {
  try {
    JSON.parse(text);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${JSON.stringify(text)} is valid JSON`);
}

/** A RaceService call as curl makes it: Connect's JSON POST with `key`; anything but 200 fails the test. */
export async function raceServiceCall(
  baseUrl: string,
  key: string,
  method: string,
  body: object,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${baseUrl}/topwagers.v1.RaceService/${method}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  if (response.status !== 200) throw new Error(`${method}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}
