/**
 * The overlay page's script (src/boards/wire/overlay-page.ts serves it inline, allowed by its hash in the page's
 * Content-Security-Policy; its style is ./overlay-page-style.ts).
 *
 * The script reads its settings from the page's JSON block, follows the SSE
 * stream with EventSource (which reconnects by itself with Last-Event-ID),
 * and builds every row with DOM calls and textContent: usernames and avatars
 * come from players and are never parsed as HTML. Totals are formatted from
 * the exact decimal text of the event, never through a float. It tries again
 * by itself after every refusal, with backoff (also when the page itself was
 * refused for now), sizes the text so that numUsers rows fill the source's
 * height, and shows viewers a neutral line while the detail goes to the
 * console (and to a top-level page outside OBS; not in a frame).
 */

/**
 * What the streamer can do about a refused key (401, 403): said with the page's own refusal and with every later one
 * the script meets while it tries again, so the hint stays on screen however long the page has been open.
 */
export const KEY_HINT = " Check the key in the address of this page (a publishable key, tw_pub_…).";

/** The script as written here, with its comments. */
const SCRIPT_SOURCE = `
(() => {
  "use strict";
  const config = JSON.parse(document.getElementById("config").textContent);
  const root = document.documentElement;
  const board = document.getElementById("board");
  const title = document.getElementById("title");
  const list = document.getElementById("list");
  const empty = document.getElementById("empty");
  const status = document.getElementById("status");
  const message = document.getElementById("message");
  const detail = document.getElementById("detail");
  const period = document.getElementById("period");
  const nextLine = document.getElementById("next");
  const markLine = document.getElementById("mark");
  // Where viewers may see the page, they see only the neutral line: OBS's browser source (it defines window.obsstudio
  // and its user agent says "OBS/…") or a frame in someone's site. The streamer's detail: a top-level page outside OBS.
  const inFrame = (() => {
    try {
      return window.top !== window.self;
    } catch {
      return true;
    }
  })();
  const onStream =
    (typeof window.obsstudio === "object" && window.obsstudio !== null) || /\\bOBS\\//.test(navigator.userAgent) || inFrame;
  const RETRYING = "The leaderboard will be back in a moment.";
  const STOPPED = "The leaderboard is not available right now.";
  let source;
  let retryMs = 1000;
  // A race (config.race): the latest event, and the server's clock less the browser's (seconds; see serverClock).
  let race = null;
  let skew = null;
  let shown = new Map();

  // The connection ("live", "retrying"); on a race's page, once connected, the race's own state instead.
  let connected = false;
  const RACE_STATES = { scheduled: "scheduled", live: "live", reviewing: "in review", final: "final", cancelled: "cancelled" };
  const setStatus = (state, text) => {
    connected = state === "live";
    if (connected && config.race) {
      const known = race !== null && RACE_STATES[race.state] !== undefined;
      status.className = "status " + (known ? race.state : "");
      status.textContent = known ? RACE_STATES[race.state] : "connecting";
      return;
    }
    status.className = "status " + state;
    status.textContent = text;
  };
  // Rows as large as the source allows: numUsers rows (shown or still to come) fill its height, never its width.
  const fit = () => {
    const height = window.innerHeight;
    const cap = Math.min(window.innerWidth / 26, 64);
    let size = parseFloat(root.style.fontSize) || 16;
    for (let i = 0; i < 4; i += 1) {
      root.style.fontSize = size + "px";
      const first = list.firstElementChild;
      const row = first === null ? 2.4 * size + 2 : first.getBoundingClientRect().height;
      const missing = Math.max(config.numUsers - list.children.length, 0);
      const emptyHeight = empty.hidden ? 0 : empty.getBoundingClientRect().height;
      const needed = document.body.getBoundingClientRect().height - emptyHeight + missing * (row + 0.3 * size);
      const next = Math.max(6, Math.min(cap, (size * 0.98 * height) / Math.max(needed, 1)));
      if (Math.abs(next - size) < 0.1) break;
      size = next;
    }
    for (let i = 0; i < 20 && size > 6 && root.scrollHeight > height; i += 1) {
      size *= 0.97;
      root.style.fontSize = size + "px";
    }
  };
  // A neutral line for viewers; the detail for the streamer: in the console, and in the page outside OBS.
  const say = (line, text) => {
    message.textContent = line;
    message.hidden = line === "";
    detail.textContent = text;
    detail.hidden = text === "" || onStream;
    if (text !== "") console.warn("topwagers overlay: " + text);
    fit();
  };
  const label = (weighted) => {
    const text = weighted ? "Top weighted wagers" : "Top wagers";
    title.textContent = text;
    document.title = text;
  };
  const mask = (name) => {
    const c = Array.from(name);
    if (c.length <= 2) return c[0] + "***";
    if (c.length <= 4) return c[0] + "***" + c[c.length - 1];
    return c.slice(0, 2).join("") + "***" + c.slice(-2).join("");
  };
  // Exact decimal text to "12,345.68" (half up), with BigInt: no float touches the total.
  const money = (text) => {
    const [whole, fraction = ""] = text.split(".");
    let cents = BigInt(whole) * 100n + BigInt((fraction + "00").slice(0, 2));
    if ((fraction[2] || "0") >= "5") cents += 1n;
    const units = (cents / 100n).toString().replace(/\\B(?=(\\d{3})+(?!\\d))/g, ",");
    return units + "." + (cents % 100n).toString().padStart(2, "0");
  };
  const safeUrl = (text) => {
    try {
      const url = new URL(text);
      return url.protocol === "https:" || url.protocol === "http:" ? url.href : "";
    } catch {
      return "";
    }
  };
  const cell = (tag, className, text) => {
    const node = document.createElement(tag);
    node.className = className;
    node.textContent = text;
    return node;
  };

  // One row: rank, avatar, name, total and (a race's) prize.
  const makeRow = (rank, entry, total, prize) => {
    const row = document.createElement("li");
    row.className = "row";
    row.dataset.rank = rank;
    // Shown once loaded: an avatar that fails leaves the empty circle, never a broken-image icon.
    const avatar = document.createElement("span");
    avatar.className = "avatar";
    const src = safeUrl(entry.avatar);
    if (src !== "") {
      const image = document.createElement("img");
      image.alt = "";
      image.referrerPolicy = "no-referrer";
      image.decoding = "async";
      image.addEventListener("load", () => image.classList.add("ready"));
      image.src = src;
      // Already in the page's image cache (the same avatar as before): shown at once, no fade again.
      if (image.complete && image.naturalWidth > 0) image.classList.add("ready");
      avatar.append(image);
    }
    row.append(
      cell("span", "rank", rank),
      avatar,
      cell("span", "name", config.mask ? mask(entry.username) : entry.username),
      cell("span", "total", money(total)),
    );
    if (prize !== undefined) row.append(cell("span", "prize", prize));
    return row;
  };
  // The rows of [rank, entry, total, prize]; a row whose total changed lights up.
  const show = (items) => {
    const next = new Map();
    const rows = items.map(([rank, entry, total, prize]) => {
      const row = makeRow(rank, entry, total, prize);
      const key = entry.username + "\\u0000" + entry.avatar;
      next.set(key, total);
      if (shown.size > 0 && shown.get(key) !== total) {
        row.classList.add("bump");
        setTimeout(() => row.classList.remove("bump"), 1200);
      }
      return row;
    });
    shown = next;
    list.replaceChildren(...rows);
    empty.hidden = rows.length > 0;
    say("", "");
  };

  // The event's data is the POST's body; its totals are read as text, in order, to keep every digit.
  const render = (data) => {
    const body = JSON.parse(data);
    const totals = [];
    let weighted = config.rankBy === "weighted";
    const pattern = /"totalWagered":([0-9.]+)(?:,"weightedWagered":([0-9.]+))?/g;
    for (let m = pattern.exec(data); m !== null; m = pattern.exec(data)) {
      // Not known when the page was refused at first: the stream has weighted totals only for a weighted board then.
      if (config.rankBy === "" && m[2] !== undefined) weighted = true;
      totals.push(weighted && m[2] !== undefined ? m[2] : m[1]);
    }
    label(weighted);
    show(body.data.map((entry, i) => [String(i + 1), entry, totals[i] || "0", undefined]));
  };

  // A race (config.race): each event is the race as REST shows it; times count from the server's own "now".
  const span = (seconds) => {
    const s = Math.max(0, Math.floor(seconds));
    const hms = [Math.floor(s / 3600) % 24, Math.floor(s / 60) % 60, s % 60]
      .map((n) => String(n).padStart(2, "0"))
      .join(":");
    return s >= 86400 ? Math.floor(s / 86400) + "d " + hms : hms;
  };
  const when = (seconds) => {
    const options = { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", timeZoneName: "short" };
    try {
      return new Intl.DateTimeFormat("en-GB", { ...options, timeZone: race.timeZone || "UTC" }).format(seconds * 1000);
    } catch {
      return new Intl.DateTimeFormat("en-GB", { ...options, timeZone: "UTC" }).format(seconds * 1000);
    }
  };
  // An exact decimal with thousands separators, every digit kept (prizes are paid as written).
  const exact = (text) => {
    const [whole, fraction] = text.split(".");
    return whole.replace(/\\B(?=(\\d{3})+(?!\\d))/g, ",") + (fraction === undefined ? "" : "." + fraction);
  };
  // A signed result's mark: its issuer (read from the signed payload; the verify page checks the signature
  // itself) and the short link to that page.
  const signedParts = (r) => {
    const signed = r.result && r.result.signed;
    if (!signed) return [];
    try {
      const part = signed.jws.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      const bytes = Uint8Array.from(atob(part.padEnd(Math.ceil(part.length / 4) * 4, "=")), (c) => c.charCodeAt(0));
      const payload = JSON.parse(new TextDecoder().decode(bytes));
      return ["verified by " + payload.iss, location.host + "/v/" + r.id.slice("race_".length)];
    } catch {
      return [];
    }
  };
  // The final results' line, piece by piece (a later piece, such as a signature's mark, is one more item).
  const finalParts = (r) => ["Final results", ...(r.result ? ["digest " + r.result.digest.slice(0, 12)] : [])];
  const tick = () => {
    if (race === null) return;
    const now = Date.now() / 1000 + skew;
    const times = {
      scheduled: () => "Starts in " + span(race.startsAt - now),
      live: () => "Ends in " + span(race.endsAt + 1 - now),
      reviewing: () => "In review · final results in " + span(race.finalAt + 1 - now),
      final: () => finalParts(race).join(" · "),
    };
    period.textContent = (times[race.state] || (() => "Cancelled"))();
    const marks = race.state === "final" ? signedParts(race) : [];
    markLine.hidden = marks.length === 0;
    if (marks.length > 0) markLine.textContent = "\u2713 " + marks.join(" \u00b7 ");
    const next = race.next;
    nextLine.hidden = !next;
    if (next) {
      const wait = next.startsAt - now;
      nextLine.textContent = "Next race " + (wait < 86400 ? "starts in " + span(wait) : "starts " + when(next.startsAt));
    }
  };
  // The server's clock: "now" is whole seconds, so each event says only that the server's clock is at least now.
  // The offset takes the highest such bound and never moves back for a lower one (which made a second last two),
  // unless the server's clock itself went back by more than the 2 s a bound can lag.
  const serverClock = (now) => {
    const bound = now - Date.now() / 1000;
    if (skew === null || bound > skew || bound < skew - 2) skew = bound;
  };
  // The countdown changes as the server's second changes: the next tick just after it.
  const ticking = () => {
    const now = Date.now() / 1000 + (skew || 0);
    setTimeout(() => {
      tick();
      ticking();
    }, Math.ceil((Math.ceil(now) - now) * 1000) + 20);
  };
  const ordinal = (n) => n + (n % 100 >= 11 && n % 100 <= 13 ? "th" : ["th", "st", "nd", "rd"][n % 10] || "th");
  // Before the start, the prize table: one row per paid place.
  const prizeRow = ([place, prize]) => {
    const row = document.createElement("li");
    row.className = "row prize-row";
    row.dataset.rank = place;
    const avatar = cell("span", "avatar", "");
    row.append(cell("span", "rank", place), avatar, cell("span", "name", ordinal(Number(place)) + " place"));
    row.append(cell("span", "total", ""), cell("span", "prize", prize));
    return row;
  };
  const renderRace = (data) => {
    const previous = race;
    race = JSON.parse(data).data;
    serverClock(race.now);
    if (connected) setStatus("live", "live");
    // Read again unchanged (every 3 s without a stream): only the clock moves.
    if (previous !== null && previous.version === race.version && race.version !== undefined) return void tick();
    title.textContent = race.title;
    document.title = race.title;
    board.dataset.state = race.state;
    const weighted = race.rankBy === "weighted";
    const paid = (prize) => (prize && !/^0*(\\.0*)?$/.test(prize) ? exact(prize) + " " + race.currency : "");
    if (race.state === "scheduled" || race.state === "cancelled") {
      const prizes = race.state === "cancelled" ? [] : race.prizes.map((p, i) => [String(i + 1), paid(p)]);
      const rows = prizes.filter(([, prize]) => prize !== "").map(prizeRow);
      config.numUsers = Math.max(rows.length, 1);
      shown = new Map();
      list.replaceChildren(...rows);
      empty.textContent = "Prizes to be announced.";
      empty.hidden = rows.length > 0 || race.state === "cancelled";
      say("", "");
    } else {
      config.numUsers = Math.max(race.shown || 0, race.entries.length, 1);
      empty.textContent = "No wagers yet in this race.";
      show(
        race.entries.map((entry) => [
          String(entry.rank),
          entry,
          (weighted ? entry.weightedWageredDecimal : entry.totalWageredDecimal) || "0",
          paid(entry.prize),
        ]),
      );
    }
    tick();
    fit();
  };

  // The next try: doubling from 1 s to 60 s, never before the server's Retry-After, with some jitter.
  const later = (retryAfterSeconds) => {
    const wait = Math.max(retryMs, retryAfterSeconds * 1000) + Math.floor(Math.random() * 250);
    retryMs = Math.min(retryMs * 2, 60000);
    setTimeout(connect, wait);
    return "Trying again in " + Math.ceil(wait / 1000) + " s.";
  };

  // Why a refused answer was refused (its message, and for a refused key what to check), and its Retry-After.
  const refusal = async (response) => {
    const body = await response.json().catch(() => null);
    const hint = response.status === 401 || response.status === 403 ? ${JSON.stringify(KEY_HINT)} : "";
    return {
      why: ((body && body.errors && body.errors[0] && body.errors[0].message) || "HTTP " + response.status) + "." + hint,
      retryAfter: Number(response.headers.get("retry-after")) || 0,
    };
  };
  const retrying = (why, retryAfter) => {
    setStatus("retrying", "offline");
    const next = later(retryAfter);
    say(RETRYING, why === "" ? "" : "This leaderboard cannot be shown: " + why + " " + next);
  };

  // EventSource gives up on an HTTP error (a limit, a 503, a revoked key): ask once to learn why, then try again later.
  const explain = async () => {
    setStatus("retrying", "offline");
    let why = "the leaderboard service cannot be reached.";
    let retryAfter = 0;
    try {
      const stop = new AbortController();
      const response = await fetch(config.stream, { cache: "no-store", signal: stop.signal });
      if (response.ok) {
        stop.abort();
        why = "";
      } else if (response.status === 404 && config.race) {
        // A service without the race stream: read the race every few seconds instead.
        config.stream = undefined;
        return void poll();
      } else ({ why, retryAfter } = await refusal(response));
    } catch {}
    retrying(why, retryAfter);
  };

  // The race read again every 3 s (the countdown runs between reads).
  const poll = async () => {
    try {
      const response = await fetch(config.raceUrl, { cache: "no-store" });
      if (response.ok) {
        renderRace(await response.text());
        setStatus("live", "live");
        retryMs = 1000;
        setTimeout(connect, 3000);
        return;
      }
      const { why, retryAfter } = await refusal(response);
      retrying(why, retryAfter);
    } catch {
      retrying("the leaderboard service cannot be reached.", 0);
    }
  };

  const connect = () => {
    if (config.stream === undefined) return void poll();
    source = new EventSource(config.stream);
    source.addEventListener("open", () => {
      setStatus("live", "live");
      retryMs = 1000;
    });
    if (config.race) {
      source.addEventListener("race", (event) => renderRace(event.data));
      source.addEventListener("message", (event) => renderRace(event.data));
    } else source.addEventListener("board", (event) => render(event.data));
    source.addEventListener("error", () => {
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        void explain();
      } else setStatus("retrying", "reconnecting");
    });
  };

  window.addEventListener("resize", fit);
  if (config.race) ticking();
  const problem = config.problem;
  if (problem === undefined) {
    fit();
    connect();
  } else if (config.stream === undefined && config.raceUrl === undefined) {
    say(STOPPED, problem.detail);
  } else {
    // The page itself was refused for now (a limit, a 503, a key not known yet): it recovers by itself.
    setStatus("retrying", "offline");
    say(RETRYING, problem.detail + " " + later(problem.retryAfterSeconds || 0));
  }
})();
`.trim();

/** The script as the page carries it: whole-line comments left out (they stay above, for readers of the source). */
export const OVERLAY_SCRIPT = SCRIPT_SOURCE.split("\n")
  .filter((line) => !/^\s*\/\//.test(line))
  .join("\n");
