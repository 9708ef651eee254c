/**
 * Where a webhook may go (SSRF guard). A receiver's URL is the customer's input: left unchecked it
 * would let anyone make this service call its own network (a database port, an admin listener, the
 * cloud's metadata service at 169.254.169.254 that hands out credentials). So a URL must be https,
 * carry no credentials, and its host must resolve only to public unicast addresses: IPv4 outside
 * loopback, private, link-local (metadata), carrier-grade NAT, multicast, unspecified and the other
 * reserved ranges (ipaddr.js's names); IPv6 only in global unicast 2000::/3, minus the ranges below. DNS can change after an endpoint is
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

/**
 * IPv6 ranges inside global unicast (2000::/3) that are not a public host: each either embeds an
 * IPv4 address that may be private (6to4, Teredo), is for documentation, or is one of the IETF's
 * protocol assignments (2001::/23: Teredo, benchmarking, ORCHID, AMT, …) rather than a web server.
 */
const REFUSED_GLOBAL_IPV6: readonly (readonly [string, string])[] = [
  ["2001::/23", "IETF protocol assignment (Teredo, benchmarking, ORCHID)"],
  ["2001:db8::/32", "documentation"],
  ["2002::/16", "6to4"],
  ["3fff::/20", "documentation"],
];

const GLOBAL_UNICAST_IPV6 = ipaddr.IPv6.parseCIDR("2000::/3");
const refusedGlobalIpv6 = REFUSED_GLOBAL_IPV6.map(([cidr, kind]) => [ipaddr.IPv6.parseCIDR(cidr), kind] as const);

/** Why an IPv6 address is not public, or undefined: only global unicast outside the ranges above passes. */
function ipv6Problem(address: ipaddr.IPv6): string | undefined {
  if (!address.match(GLOBAL_UNICAST_IPV6)) {
    const range = address.range();
    if (range === "unspecified" || range === "loopback") return range;
    if (address.isIPv4MappedAddress()) return "IPv4-mapped";
    // ::/96 is IPv4-compatible (deprecated); ipaddr.js counts it as plain "unicast".
    if (address.parts.slice(0, 6).every((part) => part === 0)) return "IPv4-compatible";
    if (range === "linkLocal") return "link-local (cloud metadata)";
    return range === "unicast" ? "reserved" : range;
  }
  for (const [range, kind] of refusedGlobalIpv6) if (address.match(range)) return kind;
  return undefined;
}

/**
 * The kind of a refused address ("loopback", "private", "6to4", …), or undefined for a public one:
 * IPv4 outside every special range ipaddr.js knows, IPv6 only in global unicast (2000::/3) minus the
 * ranges above. Any IPv4 address written as IPv6 (mapped ::ffff:0:0/96, compatible ::/96, NAT64
 * 64:ff9b::/96) is refused: a receiver with a public IPv4 address is reached by that address.
 */
export function addressProblem(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return "unparsable";
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6") return ipv6Problem(parsed as ipaddr.IPv6);
  const range = parsed.range();
  if (range === "unicast") return undefined;
  return range === "linkLocal" ? "link-local (cloud metadata)" : range;
}

/**
 * Checks a URL and resolves its host; the target is what an attempt connects to. A refusal says only
 * that the host is not a public address: never what a name resolved to, nor whether it resolved at
 * all, so the check cannot be used to map the names of the network the service runs in.
 */
export async function checkWebhookTarget(
  text: string,
  allowPrivate: boolean,
  resolve: Resolver = systemResolver,
): Promise<TargetCheck> {
  const problem = urlProblem(text, allowPrivate);
  if (problem !== undefined) return { ok: false, reason: `the URL ${problem}` };
  const url = new URL(text);
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const notPublic = { ok: false, reason: `the host ${host} is not a public address` } as const;
  let addresses: readonly { address: string; family: number }[];
  if (ipaddr.isValid(host)) addresses = [{ address: host, family: host.includes(":") ? 6 : 4 }];
  else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      if (!allowPrivate) return notPublic;
      return {
        ok: false,
        reason: `the host ${host} does not resolve (${(error as { code?: string }).code ?? "error"})`,
      };
    }
  }
  const first = addresses[0];
  if (first === undefined) return allowPrivate ? { ok: false, reason: `the host ${host} has no address` } : notPublic;
  // Every address must be public: a name that also resolves to an internal one is refused whole.
  if (!allowPrivate && addresses.some(({ address }) => addressProblem(address) !== undefined)) return notPublic;
  return { ok: true, target: { url, address: first.address, family: first.family === 6 ? 6 : 4 } };
}
