/**
 * Where a webhook may go (SSRF guard). A receiver's URL is the customer's input: left unchecked it
 * would let anyone make this service call its own network (a database port, an admin listener, the
 * cloud's metadata service at 169.254.169.254 that hands out credentials). So a URL must be https,
 * carry no credentials, and its host must resolve only to public unicast addresses: loopback,
 * private, link-local (metadata), unique-local, carrier-grade NAT, multicast, unspecified and the
 * other reserved ranges (ipaddr.js's names) are refused. DNS can change after an endpoint is
 * created, so the check runs at creation and again before every attempt, and the attempt connects
 * to the very address that was checked (no second lookup between check and connect).
 *
 * WEBHOOK_ALLOW_PRIVATE_URLS=true lifts the address check and allows plain http: for development
 * and tests, whose receivers listen on 127.0.0.1. Never in production.
 */
import { lookup } from "node:dns/promises";
import ipaddr from "ipaddr.js";

export interface WebhookTarget {
  readonly url: URL;
  /** The checked address to connect to, and its family. */
  readonly address: string;
  readonly family: 4 | 6;
}

export type TargetCheck =
  | { readonly ok: true; readonly target: WebhookTarget }
  | { readonly ok: false; readonly reason: string };

/** Resolves a host name to every address it has (dns.lookup, as the OS resolves it). */
export type Resolver = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** The URL rules that need no DNS: scheme, credentials, length. Undefined: acceptable. */
export function urlProblem(text: string, allowPrivate: boolean): string | undefined {
  if (text.length > 2048) return "must be at most 2048 characters";
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "is not an absolute URL";
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) {
    return allowPrivate ? "must be an https or http URL" : "must be an https URL";
  }
  if (url.username !== "" || url.password !== "") return "must not carry a user name or password";
  if (url.hostname === "") return "must name a host";
  return undefined;
}

/** The kind of a refused address ("loopback", "private", …), or undefined for a public unicast address. */
export function addressProblem(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return "unparsable";
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  const range = parsed.range();
  if (range === "unicast") return undefined;
  return range === "linkLocal" ? "link-local (cloud metadata)" : range;
}

/** Checks a URL and resolves its host; the target is what an attempt connects to. */
export async function checkWebhookTarget(
  text: string,
  allowPrivate: boolean,
  resolve: Resolver = systemResolver,
): Promise<TargetCheck> {
  const problem = urlProblem(text, allowPrivate);
  if (problem !== undefined) return { ok: false, reason: `the URL ${problem}` };
  const url = new URL(text);
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  let addresses: readonly { address: string; family: number }[];
  if (ipaddr.isValid(host)) addresses = [{ address: host, family: host.includes(":") ? 6 : 4 }];
  else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      return {
        ok: false,
        reason: `the host ${host} does not resolve (${(error as { code?: string }).code ?? "error"})`,
      };
    }
  }
  const first = addresses[0];
  if (first === undefined) return { ok: false, reason: `the host ${host} has no address` };
  if (!allowPrivate) {
    // Every address must be public: a name that also resolves to an internal one is refused whole.
    for (const { address } of addresses) {
      const refused = addressProblem(address);
      if (refused !== undefined) {
        return { ok: false, reason: `the host ${host} resolves to ${address}, a ${refused} address` };
      }
    }
  }
  return { ok: true, target: { url, address: first.address, family: first.family === 6 ? 6 : 4 } };
}
