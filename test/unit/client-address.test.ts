/**
 * The client address behind proxies (TRUSTED_PROXIES): the rightmost address
 * of X-Forwarded-For (or Forwarded's for=) that is not a trusted proxy, read
 * only when the TCP peer is trusted; and the setting's checks, naming each
 * bad entry.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/platform/config.js";
import {
  clientAddressOf,
  clientAddressResolver,
  forwardedFor,
  parseTrustedProxies,
  stampClientAddress,
} from "../../src/platform/transport/client-address.js";

function request(peer: string | undefined, headers: Record<string, string> = {}) {
  return { headers, socket: { remoteAddress: peer } };
}

describe("the client address", () => {
  const behindProxies = clientAddressResolver(["10.0.0.0/8", "192.168.1.7"]);
  const direct = clientAddressResolver([]);

  it("is the TCP peer without TRUSTED_PROXIES, whatever the headers say", () => {
    expect(direct(request("203.0.113.5", { "x-forwarded-for": "198.51.100.1" }))).toBe("203.0.113.5");
    expect(direct(request("::ffff:203.0.113.5"))).toBe("203.0.113.5");
    expect(direct(request("2001:db8::1"))).toBe("2001:db8::1");
  });

  it("ignores the headers of an untrusted peer", () => {
    expect(behindProxies(request("203.0.113.5", { "x-forwarded-for": "198.51.100.1" }))).toBe("203.0.113.5");
    expect(behindProxies(request("203.0.113.5", { forwarded: "for=198.51.100.1" }))).toBe("203.0.113.5");
  });

  it("is the rightmost forwarded address that is not a trusted proxy", () => {
    expect(behindProxies(request("10.1.2.3", { "x-forwarded-for": "198.51.100.1" }))).toBe("198.51.100.1");
    // A client's forged left part is skipped: the proxies append, the client can only prepend.
    expect(
      behindProxies(request("10.1.2.3", { "x-forwarded-for": "6.6.6.6, 198.51.100.1, 192.168.1.7, 10.9.9.9" })),
    ).toBe("198.51.100.1");
    expect(behindProxies(request("::ffff:10.1.2.3", { "x-forwarded-for": "198.51.100.1" }))).toBe("198.51.100.1");
    // Every hop trusted: the leftmost one.
    expect(behindProxies(request("10.1.2.3", { "x-forwarded-for": "10.4.4.4, 10.5.5.5" }))).toBe("10.4.4.4");
    // No header: the peer.
    expect(behindProxies(request("10.1.2.3"))).toBe("10.1.2.3");
  });

  it("reads Forwarded (RFC 7239) when there is no X-Forwarded-For", () => {
    expect(
      behindProxies(
        request("10.1.2.3", { forwarded: 'for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https, for=10.2.2.2' }),
      ),
    ).toBe("2001:db8:cafe::17");
    expect(forwardedFor('for=192.0.2.60;proto=http;by=203.0.113.43, For="198.51.100.17:80"')).toEqual([
      "192.0.2.60",
      "198.51.100.17",
    ]);
    // X-Forwarded-For wins when both are present.
    expect(
      behindProxies(request("10.1.2.3", { forwarded: "for=198.51.100.2", "x-forwarded-for": "198.51.100.3" })),
    ).toBe("198.51.100.3");
  });

  it("is computed once per request and read back", () => {
    const req = request("10.1.2.3", { "x-forwarded-for": "198.51.100.1" });
    expect(clientAddressOf(req)).toBe("10.1.2.3");
    expect(stampClientAddress(req, behindProxies)).toBe("198.51.100.1");
    req.headers["x-forwarded-for"] = "198.51.100.99";
    expect(clientAddressOf(req)).toBe("198.51.100.1");
  });
});

describe("TRUSTED_PROXIES", () => {
  it("takes addresses, CIDRs and proxy-addr's names", () => {
    expect(parseTrustedProxies("10.0.0.0/8, 192.168.1.7 ,fd00::/8,loopback").problems).toEqual([]);
    expect(loadConfig({ TRUSTED_PROXIES: "10.0.0.0/8,::1" }).trustedProxies).toEqual(["10.0.0.0/8", "::1"]);
    expect(loadConfig({}).trustedProxies).toEqual([]);
  });

  it("refuses a bad entry at start, naming it, with every other problem", () => {
    let error: unknown;
    try {
      loadConfig({ TRUSTED_PROXIES: "10.0.0.0/8,10.0.0.0/33,proxy.internal", PORT: "80a" });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'TRUSTED_PROXIES entry "10.0.0.0/33" is not an IP address or CIDR range (e.g. 10.0.0.0/8, 192.168.1.7, fd00::/8, loopback)',
      'TRUSTED_PROXIES entry "proxy.internal" is not an IP address or CIDR range (e.g. 10.0.0.0/8, 192.168.1.7, fd00::/8, loopback)',
      'PORT must be a whole number from 0 to 65535, got "80a"',
    ]);
  });
});
