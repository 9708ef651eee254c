/**
 * The pure parts of outgoing webhooks: the retry schedule and Retry-After, signatures as the spec's
 * reference package checks them, the address guard's refusals (with a stand-in resolver), the
 * secrets' encryption at rest, and the settings.
 */
import { createHmac, randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { type ConfigError, loadConfig } from "../../src/platform/config.js";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import { WEBHOOK_MAX_ATTEMPTS } from "../../src/values/webhook-events.js";
import { manualSendTarget } from "../../src/webhooks/core/endpoint-admin.js";
import { retryAfterMs, retryDelayMs } from "../../src/webhooks/core/schedule.js";
import { isWebhookSecret, newWebhookSecret, webhookHeaders } from "../../src/webhooks/core/signature.js";
import { addressProblem, checkWebhookTarget } from "../../src/webhooks/outbound/address-guard.js";

describe("the retry schedule", () => {
  it("is the spec's, ±10 % jitter, scaled, and ends after ten attempts", () => {
    const hours = (h: number) => h * 3600 * 1000;
    const middle = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((attempt) => retryDelayMs(attempt, 1, 0.5));
    expect(middle).toEqual([5000, 300_000, 1_800_000, hours(2), hours(5), hours(10), hours(14), hours(20), hours(24)]);
    expect(retryDelayMs(1, 1, 0)).toBe(4500);
    expect(retryDelayMs(1, 1, 0.999999)).toBe(5500);
    expect(retryDelayMs(2, 0.001, 0.5)).toBe(300);
    expect(retryDelayMs(10, 1, 0.5)).toBeUndefined();
    expect(WEBHOOK_MAX_ATTEMPTS).toBe(10);
  });

  it("reads Retry-After as seconds or an HTTP date, capped at a day", () => {
    const now = Date.parse("2026-11-27T05:00:00Z");
    expect(retryAfterMs("120", now)).toBe(120_000);
    expect(retryAfterMs("Fri, 27 Nov 2026 05:01:00 GMT", now)).toBe(60_000);
    expect(retryAfterMs("Fri, 27 Nov 2026 04:59:00 GMT", now)).toBe(0);
    expect(retryAfterMs("999999", now)).toBe(86_400_000);
    expect(retryAfterMs("soon", now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });
});

describe("signatures", () => {
  it("are accepted by standardwebhooks, one per secret, and refused under another secret", () => {
    const [a, b] = [newWebhookSecret(), newWebhookSecret()];
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(isWebhookSecret(a)).toBe(true);
    expect(isWebhookSecret("whsec_c2hvcnQ=")).toBe(false);
    const body = '{"type":"webhook.test","timestamp":"2026-11-27T05:00:00.000Z","data":{"é":"✓"}}';
    const now = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders([a, b], "msg_1", now, body);
    expect(headers["webhook-signature"].split(" ").map((s) => s.slice(0, 3))).toEqual(["v1,", "v1,"]);
    expect(new Webhook(a).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(b).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow("No matching signature found");
    expect(() => new Webhook(a).verify(`${body} `, headers)).toThrow("No matching signature found");
    // The reference package's own signature equals ours.
    expect(headers["webhook-signature"].split(" ")[0]).toBe(new Webhook(a).sign("msg_1", new Date(now * 1000), body));
  });
});

describe("the address guard", () => {
  const resolveTo =
    (...addresses: string[]) =>
    async () =>
      addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

  it("names the range of every refused address, and lets public unicast through", () => {
    expect(
      [
        "127.0.0.1",
        "169.254.169.254",
        "10.1.2.3",
        "192.168.0.1",
        "::1",
        "::ffff:7f00:1",
        "fd00:ec2::254",
        "100.100.100.200",
        "0.0.0.0",
        "fe80::1",
      ].map(addressProblem),
    ).toEqual([
      "loopback",
      "link-local (cloud metadata)",
      "private",
      "private",
      "loopback",
      "IPv4-mapped",
      "uniqueLocal",
      "carrierGradeNat",
      "unspecified",
      "link-local (cloud metadata)",
    ]);
    expect([addressProblem("93.184.215.14"), addressProblem("2606:4700::1")]).toEqual([undefined, undefined]);
  });

  // One case per IPv6 range: only global unicast (2000::/3) passes, minus the ranges inside it that
  // are no public host. Each address is written as a URL host normalises it (::127.0.0.1 → ::7f00:1).
  it.each([
    ["::7f00:1", "IPv4-compatible (::/96, here 127.0.0.1)", "IPv4-compatible"],
    ["::a00:5", "IPv4-compatible (::/96, here 10.0.0.5)", "IPv4-compatible"],
    ["::ffff:7f00:1", "IPv4-mapped (::ffff:0:0/96)", "IPv4-mapped"],
    ["::ffff:5db8:d70e", "IPv4-mapped, even of a public IPv4 address", "IPv4-mapped"],
    ["::", "unspecified (::/128)", "unspecified"],
    ["::1", "loopback (::1/128)", "loopback"],
    ["64:ff9b::a00:5", "NAT64 (64:ff9b::/96)", "rfc6052"],
    ["64:ff9b:1::1", "local-use NAT64 (64:ff9b:1::/48)", "rfc6052"],
    ["100::1", "discard-only (100::/64)", "discard"],
    ["fc00::1", "unique local (fc00::/7)", "uniqueLocal"],
    ["fd00:ec2::254", "unique local (fd00::/8, the EC2 metadata service)", "uniqueLocal"],
    ["fe80::1", "link-local (fe80::/10)", "link-local (cloud metadata)"],
    ["fec0::1", "site-local (fec0::/10)", "deprecatedSiteLocal"],
    ["ff02::1", "multicast (ff00::/8)", "multicast"],
    ["4000::1", "unassigned outside 2000::/3", "reserved"],
    ["5f00::1", "SRv6 SIDs (5f00::/16)", "segmentRouting"],
    [
      "2001:0:4136:e378:8000:63bf:3fff:fdd2",
      "Teredo (2001::/32)",
      "IETF protocol assignment (Teredo, benchmarking, ORCHID)",
    ],
    ["2001:2::1", "benchmarking (2001:2::/48)", "IETF protocol assignment (Teredo, benchmarking, ORCHID)"],
    ["2001:20::1", "ORCHIDv2 (2001:20::/28)", "IETF protocol assignment (Teredo, benchmarking, ORCHID)"],
    ["2001:1ff:ffff::1", "the end of 2001::/23", "IETF protocol assignment (Teredo, benchmarking, ORCHID)"],
    ["2001:db8::1", "documentation (2001:db8::/32)", "documentation"],
    ["3fff::1", "documentation (3fff::/20)", "documentation"],
    ["3fff:fff:ffff::1", "the end of 3fff::/20", "documentation"],
    ["2002:7f00:1::1", "6to4 (2002::/16, here of 127.0.0.1)", "6to4"],
  ])("refuses the IPv6 address %s: %s", (address, _range, kind) => {
    expect(addressProblem(address)).toBe(kind);
  });

  it.each([
    ["2606:4700::1", "global unicast"],
    ["2001:200::1", "just after 2001::/23"],
    ["2001:db9::1", "just after 2001:db8::/32"],
    ["2003::1", "just after 2002::/16"],
    ["3fff:1000::1", "just after 3fff::/20"],
    ["2000::1", "the start of 2000::/3"],
    ["3ffe:ffff::1", "before 3fff::/20"],
  ])("accepts the global unicast IPv6 address %s (%s)", (address) => {
    expect(addressProblem(address)).toBeUndefined();
  });

  it("refuses an IPv4-compatible URL host such as https://[::127.0.0.1]/ whatever it embeds", async () => {
    const nothing = async () => [];
    for (const url of ["https://[::127.0.0.1]/", "https://[::10.0.0.5]/hook", "https://[::93.184.215.14]/"]) {
      const host = new URL(url).hostname.slice(1, -1);
      expect(await checkWebhookTarget(url, false, nothing)).toEqual({
        ok: false,
        reason: `the host ${host} is not a public address`,
      });
    }
  });

  it("says only that a name is not a public address: not what it resolved to, nor whether it exists", async () => {
    const notFound = async () => {
      throw Object.assign(new Error("no"), { code: "ENOTFOUND" });
    };
    const answers = {
      private: resolveTo("10.0.0.5"),
      loopback: resolveTo("127.0.0.1"),
      "public and private": resolveTo("93.184.215.14", "10.0.0.5"),
      "IPv4-compatible": resolveTo("::7f00:1"),
      none: resolveTo(),
      "not found": notFound,
    };
    for (const resolver of Object.values(answers)) {
      expect(await checkWebhookTarget("https://db.internal/hook", false, resolver)).toEqual({
        ok: false,
        reason: "the host db.internal is not a public address",
      });
    }
  });

  it("refuses by URL and by every resolved address, unless private URLs are allowed", async () => {
    const check = (url: string, allow: boolean, resolver = resolveTo("93.184.215.14")) =>
      checkWebhookTarget(url, allow, resolver);
    expect(await check("http://example.com/hook", false)).toEqual({
      ok: false,
      reason: "the URL must be an https URL",
    });
    expect(await check("https://user:pw@example.com/hook", false)).toEqual({
      ok: false,
      reason: "the URL must not carry a user name or password",
    });
    expect(await check("https://example.com/hook", false, resolveTo("93.184.215.14", "10.0.0.5"))).toEqual({
      ok: false,
      reason: "the host example.com is not a public address",
    });
    expect(await check("https://[::1]:8443/hook", false)).toEqual({
      ok: false,
      reason: "the host ::1 is not a public address",
    });
    const fine = await check("https://example.com/hook", false);
    expect(fine.ok && [fine.target.address, fine.target.family, fine.target.url.href]).toEqual([
      "93.184.215.14",
      4,
      "https://example.com/hook",
    ]);
    const local = await check("http://127.0.0.1:9/hook", true);
    expect(local.ok && local.target.address).toBe("127.0.0.1");
    const missing = await checkWebhookTarget("https://nowhere.invalid/", false, async () => {
      throw Object.assign(new Error("no"), { code: "ENOTFOUND" });
    });
    expect(missing).toEqual({ ok: false, reason: "the host nowhere.invalid is not a public address" });
    const missingInDevelopment = await checkWebhookTarget("https://nowhere.invalid/", true, async () => {
      throw Object.assign(new Error("no"), { code: "ENOTFOUND" });
    });
    expect(missingInDevelopment).toEqual({
      ok: false,
      reason: "the host nowhere.invalid does not resolve (ENOTFOUND)",
    });
  });
});

describe("secrets at rest", () => {
  it("are AES-256-GCM under the key, bound to their endpoint, and plain only without a key", () => {
    const secret = newWebhookSecret();
    const key = randomBytes(32);
    const box = new SecretBox(key);
    const sealed = box.seal("ep_1", secret);
    expect(sealed.toString("utf8")).toMatch(/^enc1:/);
    expect(sealed.toString("utf8")).not.toContain(secret.slice(6, 20));
    expect(box.open("ep_1", sealed)).toBe(secret);
    // Issue 47: the refusal names the real cause and the fingerprints of the keys tried (never a key).
    const other = randomBytes(32);
    const fingerprint = (key: Buffer) =>
      createHmac("sha256", key).update("topwagers secret key fingerprint").digest("hex").slice(0, 16);
    const otherKey =
      "was sealed under another WEBHOOK_SECRET_KEY than this instance's (fingerprint %s; WEBHOOK_SECRET_KEY_PREVIOUS: " +
      "none): set the key that sealed it (as WEBHOOK_SECRET_KEY, or in WEBHOOK_SECRET_KEY_PREVIOUS), or make and " +
      "activate a new key with this one";
    expect(() => box.open("ep_2", sealed)).toThrow(`the secret ep_2 ${otherKey.replace("%s", fingerprint(key))}`);
    expect(() => new SecretBox(other).open("ep_1", sealed)).toThrow(
      `the secret ep_1 ${otherKey.replace("%s", fingerprint(other))}`,
    );
    expect(() => new SecretBox(undefined).open("ep_1", sealed)).toThrow(
      "the secret ep_1 is sealed and WEBHOOK_SECRET_KEY is not set on this instance: set it to the key that sealed " +
        "it (the one in use when it was made)",
    );
    expect(new SecretBox(other, [key]).openerOf("ep_1", sealed)).toBe(fingerprint(key));
    expect(new SecretBox(other).openerOf("ep_1", sealed)).toBeUndefined();
    const plain = new SecretBox(undefined).seal("ep_1", secret);
    expect(plain.toString("utf8")).toBe(`plain:${secret}`);
    expect(box.open("ep_1", plain)).toBe(secret);
  });
});

describe("the webhook settings", () => {
  it("default to production values and read every variable", () => {
    expect(loadConfig({}).webhooks).toEqual({
      delivery: true,
      allowPrivateUrls: false,
      secretKey: undefined,
      previousSecretKeys: [],
      retryScale: 1,
      timeoutMs: 15_000,
      pollMs: 1_000,
      endpointsPerAffiliate: 20,
      manualSendsPerMinute: 10,
    });
    const key = randomBytes(32);
    const previous = [randomBytes(32), randomBytes(32)];
    const set = loadConfig({
      WEBHOOK_DELIVERY: "false",
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_SECRET_KEY: key.toString("hex"),
      WEBHOOK_SECRET_KEY_PREVIOUS: `${previous[0]?.toString("hex")}, ${previous[1]?.toString("base64")}`,
      WEBHOOK_RETRY_SCALE: "0.001",
      WEBHOOK_TIMEOUT_MS: "500",
      WEBHOOK_POLL_MS: "50",
      WEBHOOK_ENDPOINTS_PER_AFFILIATE: "3",
      WEBHOOK_MANUAL_SENDS_PER_MINUTE: "4",
    }).webhooks;
    expect(set).toEqual({
      delivery: false,
      allowPrivateUrls: true,
      secretKey: key,
      previousSecretKeys: previous,
      retryScale: 0.001,
      timeoutMs: 500,
      pollMs: 50,
      endpointsPerAffiliate: 3,
      manualSendsPerMinute: 4,
    });
    expect(loadConfig({ WEBHOOK_SECRET_KEY: key.toString("base64") }).webhooks.secretKey).toEqual(key);
  });

  it("names every bad one, without echoing the key", () => {
    const problems = (() => {
      try {
        loadConfig({
          WEBHOOK_SECRET_KEY: "hunter2",
          WEBHOOK_RETRY_SCALE: "0",
          WEBHOOK_ALLOW_PRIVATE_URLS: "yes",
          WEBHOOK_ENDPOINTS_PER_AFFILIATE: "0",
          WEBHOOK_MANUAL_SENDS_PER_MINUTE: "ten",
          RACES_PER_AFFILIATE: "-1",
        });
        return [];
      } catch (error) {
        return (error as ConfigError).problems;
      }
    })();
    expect(problems).toEqual([
      'WEBHOOK_ALLOW_PRIVATE_URLS must be true or false, got "yes"',
      "WEBHOOK_SECRET_KEY must be 32 bytes as 64 hex digits or base64 (use: openssl rand -hex 32)",
      'WEBHOOK_RETRY_SCALE must be a number above 0 and at most 1000, got "0"',
      'WEBHOOK_ENDPOINTS_PER_AFFILIATE must be a whole number from 1 to 10000, got "0"',
      'WEBHOOK_MANUAL_SENDS_PER_MINUTE must be a whole number from 1 to 100000, got "ten"',
      'RACES_PER_AFFILIATE must be a whole number from 1 to 100000, got "-1"',
    ]);
    expect([loadConfig({}).racesPerAffiliate, loadConfig({ RACES_PER_AFFILIATE: "7" }).racesPerAffiliate]).toEqual([
      50, 7,
    ]);
  });
});

describe("the key manual sends to a URL are counted under", () => {
  it("is one per affiliate and URL however the URL is written, and the affiliate's own", () => {
    const key = (url: string, affiliate = "aff-1") => manualSendTarget(affiliate, url);
    const same = [
      "https://hooks.example.com/in?x=1",
      "HTTPS://Hooks.Example.COM:443/in?x=1",
      "https://hooks.example.com/a/../in?x=1#fragment",
    ];
    expect(new Set(same.map((url) => key(url)))).toEqual(new Set([key(same[0] as string)]));
    expect(key(same[0] as string)).toBe('url ["aff-1","https://hooks.example.com/in?x=1"]');
    for (const other of [
      "https://hooks.example.com/in?x=2",
      "https://hooks.example.com:8443/in?x=1",
      "http://hooks.example.com/in?x=1",
    ]) {
      expect(key(other)).not.toBe(key(same[0] as string));
    }
    expect(key(same[0] as string, "aff-2")).not.toBe(key(same[0] as string));
  });
});
