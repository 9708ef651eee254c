/**
 * The serving settings: the listeners and the REST base path, the service tokens, the client address behind
 * proxies, the answer cache and the change feed, rate limits and live-board streams.
 */

import { DAY } from "../../values/calendar.js";
import { parseTrustedProxies } from "../transport/client-address.js";
import type { EnvReader } from "./env-reader.js";

export interface ServingSettings {
  readonly port: number;
  readonly host: string;
  /** Prefix of the REST path only, e.g. "/api"; "" when unset. */
  readonly basePath: string;
  readonly internalPort: number;
  readonly internalHost: string;
  /** A listener that serves GET /metrics alone (METRICS_PORT); undefined: /metrics is on the internal listener. */
  readonly metrics: { readonly port: number; readonly host: string } | undefined;
  /** ACCESS_LOG=true: one info line per call (procedure or path, protocol, code, duration, key id, client). */
  readonly accessLog: boolean;
  /** Bearer token for the internal ingest service; undefined disables ingest. */
  readonly ingestToken: string | undefined;
  /** Bearer token of the ApiKeyService (partner portal); unset disables it. */
  readonly adminToken: string | undefined;
  readonly cacheTtlMs: number;
  /** How often the change feed is read (boards/core/change-feed.ts). */
  readonly changeFeedPollMs: number;
  /** Cached answers are served only while the last good read of the change feed started less than this ago. */
  readonly changeFeedMaxLagMs: number;
  readonly rateLimit: { readonly points: number; readonly windowSeconds: number };
  /** Calls per RATE_LIMIT_WINDOW_S of a publishable key from one client address (default 30). */
  readonly publishableRatePoints: number;
  /** Proxies whose X-Forwarded-For / Forwarded is believed (addresses, CIDRs); empty: the TCP peer is the client. */
  readonly trustedProxies: readonly string[];
  /** Live-board streams: heartbeat interval and the limits of open streams. */
  readonly streams: {
    readonly heartbeatSeconds: number;
    readonly perKey: number;
    readonly perAddress: number;
    readonly total: number;
  };
}

/** BASE_PATH without its trailing slashes. */
export function readBasePath(read: EnvReader): string {
  const basePath = read.text("BASE_PATH", "").replace(/\/+$/, "");
  if (basePath !== "" && !/^\/[A-Za-z0-9._~\-/]*$/.test(basePath)) {
    read.problem(`BASE_PATH must start with "/" and hold only URL path characters, got "${basePath}"`);
  }
  return basePath;
}

/** The bearer tokens of the ingest service and the ApiKeyService: long enough, and not the same. */
export function readTokens(read: EnvReader): Pick<ServingSettings, "ingestToken" | "adminToken"> {
  const ingestToken = read.optional("INGEST_TOKEN");
  if (ingestToken !== undefined && ingestToken.length < 16) {
    read.problem("INGEST_TOKEN must be at least 16 characters (use: openssl rand -hex 32)");
  }
  const adminToken = read.optional("ADMIN_TOKEN");
  if (adminToken !== undefined && adminToken.length < 16) {
    read.problem("ADMIN_TOKEN must be at least 16 characters (use: openssl rand -hex 32)");
  }
  if (adminToken !== undefined && adminToken === ingestToken) {
    read.problem("ADMIN_TOKEN must differ from INGEST_TOKEN (the ingest platform must not be able to issue keys)");
  }
  return { ingestToken, adminToken };
}

export function readTrustedProxies(read: EnvReader): readonly string[] {
  const text = read.text("TRUSTED_PROXIES", "");
  for (const problem of parseTrustedProxies(text).problems) read.problem(problem);
  return text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
}

/** The public and internal listeners, and the metrics listener when METRICS_PORT is set. */
export function readListeners(
  read: EnvReader,
): Pick<ServingSettings, "port" | "host" | "internalPort" | "internalHost" | "metrics"> {
  return {
    port: read.integer("PORT", 8080, 0, 65535),
    host: read.text("HOST", "0.0.0.0"),
    internalPort: read.integer("INTERNAL_PORT", 9090, 0, 65535),
    internalHost: read.text("INTERNAL_HOST", "127.0.0.1"),
    metrics:
      read.text("METRICS_PORT", "") === ""
        ? undefined
        : {
            port: read.integer("METRICS_PORT", 0, 0, 65535),
            host: read.text("METRICS_HOST", read.text("INTERNAL_HOST", "127.0.0.1")),
          },
  };
}

export function readCaching(
  read: EnvReader,
): Pick<ServingSettings, "cacheTtlMs" | "changeFeedPollMs" | "changeFeedMaxLagMs"> {
  return {
    cacheTtlMs: read.integer("CACHE_TTL_MS", 10_000, 0, 3_600_000),
    changeFeedPollMs: read.integer("CHANGE_FEED_POLL_MS", 200, 10, 60_000),
    changeFeedMaxLagMs: read.integer("CHANGE_FEED_MAX_LAG_MS", 900, 100, 600_000),
  };
}

/** Cached answers are served only while the change feed lags less than its limit, so it must exceed a poll. */
export function checkChangeFeedLag(
  read: EnvReader,
  config: Pick<ServingSettings, "changeFeedPollMs" | "changeFeedMaxLagMs">,
): void {
  if (config.changeFeedMaxLagMs <= config.changeFeedPollMs) {
    read.problem(
      `CHANGE_FEED_MAX_LAG_MS (${config.changeFeedMaxLagMs}) must be greater than CHANGE_FEED_POLL_MS (${config.changeFeedPollMs}), or cached answers are never served`,
    );
  }
}

export function readRateLimits(read: EnvReader): Pick<ServingSettings, "rateLimit" | "publishableRatePoints"> {
  return {
    rateLimit: {
      points: read.integer("RATE_LIMIT_POINTS", 60, 1, 1_000_000_000),
      windowSeconds: read.integer("RATE_LIMIT_WINDOW_S", 60, 1, DAY),
    },
    publishableRatePoints: read.integer("PUBLISHABLE_RATE_LIMIT_POINTS", 30, 1, 1_000_000_000),
  };
}

export function readStreamLimits(read: EnvReader): ServingSettings["streams"] {
  return {
    heartbeatSeconds: read.integer("STREAM_HEARTBEAT_S", 15, 1, 3600),
    perKey: read.integer("STREAM_LIMIT_PER_KEY", 10_000, 0, 10_000_000),
    perAddress: read.integer("STREAM_LIMIT_PER_ADDRESS", 20, 0, 10_000_000),
    total: read.integer("STREAM_LIMIT", 20_000, 0, 10_000_000),
  };
}
