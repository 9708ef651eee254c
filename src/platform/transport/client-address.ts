/**
 * The client address of a request, for every per-address rule (the failed-key
 * brake, publishable keys' rate limits, the live boards' stream limit, the
 * access log). Behind a load balancer the TCP peer is the proxy, so with
 * TRUSTED_PROXIES set (CIDR list) the address of a request whose peer is
 * trusted comes from X-Forwarded-For (or, without it, the `for=` of
 * Forwarded, RFC 7239): the rightmost address that is not itself a trusted
 * proxy, as express and fastify find it with proxy-addr. A header from an
 * untrusted peer is never read. Computed once per request by the listener
 * (`stampClientAddress`) and read anywhere with `clientAddressOf`.
 */
import proxyAddr from "proxy-addr";

export type TrustFunction = (address: string, index: number) => boolean;

/** The part of a request this module reads (Node's HTTP/1.1 and HTTP/2 requests both have it). */
export interface AddressedRequest {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly socket: { readonly remoteAddress?: string | undefined };
}

/** The words proxy-addr knows besides addresses and CIDRs. */
const NAMED_RANGES = new Set(["loopback", "linklocal", "uniquelocal"]);

/**
 * TRUSTED_PROXIES as a trust function: a comma-separated list of addresses, CIDRs
 * (10.0.0.0/8, fd00::/8) or the names loopback, linklocal, uniquelocal. Empty: none.
 * Each bad entry is a problem naming it.
 */
export function parseTrustedProxies(text: string): { trust: TrustFunction | undefined; problems: string[] } {
  const entries = text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  const problems: string[] = [];
  for (const entry of entries) {
    if (NAMED_RANGES.has(entry)) continue;
    try {
      proxyAddr.compile(entry);
    } catch {
      problems.push(
        `TRUSTED_PROXIES entry "${entry}" is not an IP address or CIDR range (e.g. 10.0.0.0/8, 192.168.1.7, fd00::/8, loopback)`,
      );
    }
  }
  if (entries.length === 0 || problems.length > 0) return { trust: undefined, problems };
  return { trust: proxyAddr.compile(entries), problems };
}

/** "::ffff:192.0.2.1" → "192.0.2.1": one spelling per client, whichever stack the socket is on. */
function plain(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/** The `for=` values of a Forwarded header, first hop first, without quotes, brackets or ports. */
export function forwardedFor(header: string): string[] {
  const out: string[] = [];
  for (const element of header.split(",")) {
    for (const pair of element.split(";")) {
      const eq = pair.indexOf("=");
      if (eq < 0 || pair.slice(0, eq).trim().toLowerCase() !== "for") continue;
      let value = pair
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, "$1");
      const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value);
      if (bracketed !== null) value = bracketed[1] as string;
      else if (/^[\d.]+:\d+$/.test(value)) value = value.slice(0, value.lastIndexOf(":"));
      out.push(value);
    }
  }
  return out;
}

/** Finds a request's client address, trusting these proxies (TRUSTED_PROXIES, checked; none: the TCP peer). */
export function clientAddressResolver(trustedProxies: readonly string[]): (req: AddressedRequest) => string {
  const { trust } = parseTrustedProxies(trustedProxies.join(","));
  if (trust === undefined) return (req) => plain(req.socket.remoteAddress ?? "unknown");
  return (req) => {
    const peer = req.socket.remoteAddress;
    if (peer === undefined) return "unknown";
    if (!trust(peer, 0)) return plain(peer);
    const xff = req.headers["x-forwarded-for"];
    const forwarded = req.headers.forwarded;
    let chain: string | undefined;
    if (xff !== undefined) chain = Array.isArray(xff) ? xff.join(",") : xff;
    else if (forwarded !== undefined)
      chain = forwardedFor(Array.isArray(forwarded) ? forwarded.join(",") : forwarded).join(",");
    if (chain === undefined) return plain(peer);
    // proxy-addr walks from the peer leftwards through X-Forwarded-For while each hop is trusted.
    const view = { headers: { "x-forwarded-for": chain }, socket: { remoteAddress: peer } };
    return plain(proxyAddr(view as unknown as Parameters<typeof proxyAddr>[0], trust));
  };
}

const CLIENT_ADDRESS = Symbol("topwagers.clientAddress");

type Stamped = { [CLIENT_ADDRESS]?: string };

/** Computes the request's client address once and keeps it on the request. */
export function stampClientAddress(req: AddressedRequest, resolve: (req: AddressedRequest) => string): string {
  const stamped = req as Stamped;
  const address = resolve(req);
  stamped[CLIENT_ADDRESS] = address;
  return address;
}

/** The client address of this request, as the listener computed it (the TCP peer when it did not). */
export function clientAddressOf(req: AddressedRequest): string {
  return (req as Stamped)[CLIENT_ADDRESS] ?? plain(req.socket.remoteAddress ?? "unknown");
}
