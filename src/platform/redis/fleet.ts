/**
 * The fleet on Redis (REDIS_URL): which instances are alive, and a board's request and answer between two of them
 * (the port: ports/fleet.ts; what it is for: boards/core/fleet-standings.ts).
 *
 * Alive: every instance writes its id into one sorted set every 250 ms, scored by Redis's own clock (so the machines'
 * clocks do not matter), and reads back the ids written within the last second. An instance that stops writing
 * (killed, cut off) drops out of every other instance's list within 1.25 s. An instance that cannot reach Redis
 * counts itself alone and computes its boards itself.
 *
 * Requests and answers: each instance listens on a channel of its own; a request names the channel to answer on.
 * PUBLISH says how many listeners got a message, so a request to an instance that is gone fails at once instead of
 * waiting for the timeout, and requests to an instance that drops out of the list fail when it does. The keys and channels are scoped by the fleet's name (FLEET_NAME; by default the
 * database's host, port and name), so two deployments sharing one Redis never answer each other's boards.
 *
 * Answers carry what they were computed under (issue 47): the keys are `topwagers:fleet2:…` (releases up to 0.4.0
 * use `topwagers:fleet:…`, and an instance that knows no retention horizon is never asked nor answered), the members'
 * set is scoped by `scope()` (the generation of the retention horizons the instance answers under, so instances
 * that read different horizons are two fleets until they agree), and every ask and answer names its scope: a leader
 * refuses an ask of another scope, and an asker takes no answer of another scope (it computes the board itself).
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import type { FleetAnswer, FleetEntry, FleetRequest, FleetTransport } from "../../ports/fleet.js";
import { isRankBy } from "../../values/weights.js";
import type { Logger } from "../logger.js";

const HEARTBEAT_MS = 250;
/** The first heartbeat waits this long at most for the first connection (ready, or refused: then it warns). */
const FIRST_CONNECTION_WAIT_MS = 2_000;
/** An instance not heard of for this long is no longer alive. */
const ALIVE_MS = 1_000;

/** Writes this instance's heartbeat and returns the ids alive, in one round trip, on Redis's clock. */
const HEARTBEAT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], 60000)
return redis.call('ZRANGE', KEYS[1], 0, -1)`;

interface Pending {
  readonly member: string;
  readonly resolve: (answer: FleetAnswer | undefined) => void;
  readonly timer: NodeJS.Timeout;
}

type Message =
  | {
      readonly t: "ask";
      readonly id: string;
      readonly from: string;
      readonly p: unknown;
      readonly m: number;
      readonly f?: boolean;
      readonly s?: string;
    }
  | { readonly t: "answer"; readonly id: string; readonly b: number; readonly e: FleetEntry[]; readonly s?: string }
  | { readonly t: "fail"; readonly id: string };

/**
 * `scope`: what this instance's answers are computed under (server.ts: the generation of its retention horizons);
 * only instances of one scope share boards. Default: one scope for all.
 */
export function createRedisFleet(
  redisUrl: string,
  name: string,
  logger: Logger,
  scope: () => string = () => "",
): FleetTransport {
  return new RedisFleet(redisUrl, name, logger, scope);
}

class RedisFleet implements FleetTransport {
  readonly self = randomUUID();
  private readonly commands: Redis;
  private readonly subscriber: Redis;
  private readonly keyPrefix: string;
  /** The members' set this instance last wrote itself into (its scope's). */
  private membersKey: string;
  private readonly channelPrefix: string;
  private alive: readonly string[];
  private readonly listeners: (() => void)[] = [];
  private readonly pending = new Map<string, Pending>();
  private serving: ((request: FleetRequest) => Promise<FleetAnswer>) | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private cutOff = false;
  private closed = false;

  constructor(
    redisUrl: string,
    private readonly name: string,
    private readonly logger: Logger,
    private readonly scope: () => string,
  ) {
    const options = {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 1_000,
      commandTimeout: 1_000,
      retryStrategy: (attempt: number) => Math.min(attempt * 200, 1_000),
    };
    this.commands = new Redis(redisUrl, options);
    this.subscriber = new Redis(redisUrl, { ...options, enableOfflineQueue: true, commandTimeout: undefined });
    this.commands.on("error", () => undefined);
    this.subscriber.on("error", () => undefined);
    this.keyPrefix = `topwagers:fleet2:${name}`;
    this.membersKey = this.membersKeyOf(scope());
    this.channelPrefix = `${this.keyPrefix}:to:`;
    this.alive = [this.self];
    this.subscriber.subscribe(this.channelOf(this.self)).catch(() => undefined);
    this.subscriber.on("message", (_channel: string, text: string) => this.received(text));
    void this.startBeating();
  }

  /**
   * The first heartbeat waits for the first connection to be up (or to fail): sent at once, it met a socket still
   * connecting and logged "fleet unreachable" on every healthy start, then "reachable again" a moment later.
   */
  private async startBeating(): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, FIRST_CONNECTION_WAIT_MS);
      timer.unref();
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.commands.once("ready", done);
      this.commands.once("error", done);
      this.commands.once("end", done);
    });
    if (this.closed) return;
    this.heartbeat = setInterval(() => void this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
    await this.beat();
  }

  members(): readonly string[] {
    return this.alive;
  }

  onMembersChanged(listener: () => void): void {
    this.listeners.push(listener);
  }

  serve(answer: (request: FleetRequest) => Promise<FleetAnswer>): void {
    this.serving = answer;
  }

  ask(member: string, request: FleetRequest, timeoutMs: number): Promise<FleetAnswer | undefined> {
    const id = randomUUID();
    const { affiliateId, start, end, rankBy } = request.period;
    const p = [affiliateId, start, end, rankBy];
    const message = { t: "ask", id, from: this.self, p, m: request.minBasis, f: request.fresh, s: this.scope() };
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.settle(id, undefined), timeoutMs);
      timer.unref();
      this.pending.set(id, { member, resolve, timer });
      this.commands.publish(this.channelOf(member), JSON.stringify(message)).then(
        (listeners) => {
          if (listeners === 0) this.settle(id, undefined); // that instance is gone
        },
        () => this.settle(id, undefined),
      );
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const id of [...this.pending.keys()]) this.settle(id, undefined);
    await this.commands.zrem(this.membersKey, this.self).catch(() => undefined);
    this.commands.disconnect();
    this.subscriber.disconnect();
  }

  private channelOf(member: string): string {
    return `${this.channelPrefix}${member}`;
  }

  private membersKeyOf(scope: string): string {
    return `${this.keyPrefix}:${scope === "" ? "" : `${scope}:`}members`;
  }

  private async beat(): Promise<void> {
    let members: string[];
    try {
      const key = this.membersKeyOf(this.scope());
      // A new scope: leave the old one's set at once, so its members stop asking this instance.
      if (key !== this.membersKey) await this.commands.zrem(this.membersKey, this.self).catch(() => undefined);
      this.membersKey = key;
      members = (await this.commands.eval(HEARTBEAT_SCRIPT, 1, key, this.self, ALIVE_MS)) as string[];
      if (this.cutOff) this.logger.info("fleet reachable again: sharing boards with the other instances");
      this.cutOff = false;
    } catch {
      if (!this.cutOff && !this.closed) {
        this.logger.warn("fleet unreachable (Redis): this instance computes every board itself until it returns");
      }
      this.cutOff = true;
      members = [this.self];
    }
    if (this.closed) return;
    const sorted = [...new Set([...members, this.self])].sort();
    if (sorted.length === this.alive.length && sorted.every((m, i) => m === this.alive[i])) return;
    this.alive = sorted;
    // One line per change of the fleet (an instance started, stopped, or stopped answering): what an operator
    // looks for when boards move between instances.
    this.logger.info({ fleet: this.name, members: sorted.length }, "fleet members changed");
    // Asks of an instance no longer alive get no answer: the askers compute at once instead of waiting.
    for (const [id, pending] of this.pending) if (!sorted.includes(pending.member)) this.settle(id, undefined);
    for (const listener of this.listeners) listener();
  }

  private received(text: string): void {
    let message: Message;
    try {
      message = JSON.parse(text) as Message;
    } catch {
      return;
    }
    if (message.t === "ask") {
      void this.answer(message);
      return;
    }
    // An answer computed under another scope is none: the asker computes the board itself.
    const taken = message.t === "answer" && (message.s ?? "") === this.scope() ? message : undefined;
    this.settle(message.id, taken === undefined ? undefined : { basis: taken.b, entries: taken.e });
  }

  private async answer(message: Extract<Message, { t: "ask" }>): Promise<void> {
    const period = periodOf(message.p);
    let reply: object;
    try {
      if (period === undefined || this.serving === undefined) throw new Error("cannot serve this request");
      const scope = this.scope();
      if ((message.s ?? "") !== scope) throw new Error("asked under another scope");
      const answer = await this.serving({ period, minBasis: Number(message.m), fresh: message.f === true });
      reply = { t: "answer", id: message.id, b: answer.basis, e: answer.entries, s: scope };
    } catch {
      reply = { t: "fail", id: message.id };
    }
    this.commands.publish(this.channelOf(String(message.from)), JSON.stringify(reply)).catch(() => undefined);
  }

  private settle(id: string, answer: FleetAnswer | undefined): void {
    const pending = this.pending.get(id);
    if (pending === undefined) return;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    pending.resolve(answer);
  }
}

/** A request's period, checked: [affiliateId, start, end, rankBy]. */
function periodOf(value: unknown): FleetRequest["period"] | undefined {
  if (!Array.isArray(value) || value.length !== 4) return undefined;
  const [affiliateId, start, end, rankBy] = value as unknown[];
  if (![affiliateId, start, end].every((n) => Number.isSafeInteger(n)) || !isRankBy(rankBy)) return undefined;
  return { affiliateId: affiliateId as number, start: start as number, end: end as number, rankBy };
}
