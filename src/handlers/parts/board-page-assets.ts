/**
 * The overlay page's style and script (src/handlers/board-page.ts serves them
 * inline, allowed by their hashes in the page's Content-Security-Policy).
 *
 * The script reads its settings from the page's JSON block, follows the SSE
 * stream with EventSource (which reconnects by itself with Last-Event-ID),
 * and builds every row with DOM calls and textContent: usernames and avatars
 * come from players and are never parsed as HTML. Totals are formatted from
 * the exact decimal text of the event, never through a float. It tries again
 * by itself after every refusal, with backoff (also when the page itself was
 * refused for now), sizes the text so that numUsers rows fill the source's
 * height, and shows viewers a neutral line while the detail goes to the
 * console (and to the page outside OBS).
 */

export const OVERLAY_STYLE = `
:root{color-scheme:dark;--fg:#f5f7fa;--muted:#9aa4b2;--bg:#0f1218;--row:#1a1f29;--line:#2a3140;--gold:#f5c542;--silver:#c9d1dc;--bronze:#d08a4e;--live:#36d67a;--warn:#ffb020;--shadow:none}
:root.theme-light{color-scheme:light;--fg:#10141b;--muted:#5b6473;--bg:#f4f6f9;--row:#fff;--line:#dde2ea;--gold:#b8860b;--silver:#6b7686;--bronze:#a0522d}
:root.theme-transparent{color-scheme:normal;--bg:transparent;--row:rgba(10,12,18,.55);--line:rgba(255,255,255,.12);--shadow:0 1px 3px rgba(0,0,0,.9)}
*{box-sizing:border-box}
html{background:var(--bg);font-size:16px}
body{margin:0;background:transparent;color:var(--fg);font:500 1rem/1.25 system-ui,-apple-system,"Segoe UI",Roboto,Ubuntu,sans-serif;text-shadow:var(--shadow);padding:.5em .6em}
.board{max-width:46em;margin:0 auto}
header{display:flex;align-items:baseline;gap:.6em;flex-wrap:wrap;margin-bottom:.45em}
h1{font-size:1.25em;margin:0;font-weight:800;letter-spacing:.02em}
.period{margin:0;color:var(--muted);font-size:.8em;flex:1}
.status{font-size:.7em;text-transform:uppercase;letter-spacing:.08em;color:var(--muted)}
.status::before{content:"";display:inline-block;width:.6em;height:.6em;border-radius:50%;margin-right:.4em;background:var(--muted)}
.status.live::before{background:var(--live)}
.status.retrying::before{background:var(--warn)}
.message{margin:.3em 0 .5em;padding:.45em .7em;border-radius:.4em;background:var(--row);border-left:.25em solid var(--warn);font-size:.85em}
.detail{margin:0 0 .5em;padding:0 .7em;color:var(--muted);font-size:.7em;overflow-wrap:anywhere}
.list{list-style:none;margin:0;padding:0;display:grid;gap:.3em}
.row{display:grid;grid-template-columns:2em 1.8em minmax(0,1fr) auto;align-items:center;gap:.55em;padding:.3em .6em;border-radius:.45em;background:var(--row);border:1px solid var(--line);transition:background .6s}
.row.bump{background:rgba(54,214,122,.28)}
.rank{font-weight:800;text-align:center;font-variant-numeric:tabular-nums}
.row:nth-child(1) .rank{color:var(--gold)}
.row:nth-child(2) .rank{color:var(--silver)}
.row:nth-child(3) .rank{color:var(--bronze)}
.avatar{width:1.8em;height:1.8em;border-radius:50%;overflow:hidden;background:var(--line)}
.avatar img{width:100%;height:100%;object-fit:cover;opacity:0;transition:opacity .3s}
.avatar img.ready{opacity:1}
.name{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.total{font-weight:700;font-variant-numeric:tabular-nums;text-align:right}
.empty{color:var(--muted);text-align:center;padding:1em}
`.trim();

export const OVERLAY_SCRIPT = `
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
  // OBS's browser source defines window.obsstudio: there the page is on stream, so viewers see only the neutral line.
  const onStream = typeof window.obsstudio === "object" && window.obsstudio !== null;
  const RETRYING = "The leaderboard will be back in a moment.";
  const STOPPED = "The leaderboard is not available right now.";
  let source;
  let retryMs = 1000;
  let shown = new Map();

  const setStatus = (state, text) => {
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
    const next = new Map();
    const rows = body.data.map((entry, i) => {
      const row = document.createElement("li");
      row.className = "row";
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
        avatar.append(image);
      }
      const total = totals[i] || "0";
      row.append(
        cell("span", "rank", String(i + 1)),
        avatar,
        cell("span", "name", config.mask ? mask(entry.username) : entry.username),
        cell("span", "total", money(total)),
      );
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

  // The next try: doubling from 1 s to 60 s, never before the server's Retry-After, with some jitter.
  const later = (retryAfterSeconds) => {
    const wait = Math.max(retryMs, retryAfterSeconds * 1000) + Math.floor(Math.random() * 250);
    retryMs = Math.min(retryMs * 2, 60000);
    setTimeout(connect, wait);
    return "Trying again in " + Math.ceil(wait / 1000) + " s.";
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
      } else {
        retryAfter = Number(response.headers.get("retry-after")) || 0;
        const body = await response.json().catch(() => null);
        why = ((body && body.errors && body.errors[0] && body.errors[0].message) || "HTTP " + response.status) + ".";
      }
    } catch {}
    const next = later(retryAfter);
    say(RETRYING, why === "" ? "" : "This leaderboard cannot be shown: " + why + " " + next);
  };

  const connect = () => {
    source = new EventSource(config.stream);
    source.addEventListener("open", () => {
      setStatus("live", "live");
      retryMs = 1000;
    });
    source.addEventListener("board", (event) => render(event.data));
    source.addEventListener("error", () => {
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        void explain();
      } else setStatus("retrying", "reconnecting");
    });
  };

  window.addEventListener("resize", fit);
  const problem = config.problem;
  if (problem === undefined) {
    fit();
    connect();
  } else if (config.stream === undefined) {
    say(STOPPED, problem.detail);
  } else {
    // The page itself was refused for now (a limit, a 503, a key not known yet): it recovers by itself.
    setStatus("retrying", "offline");
    say(RETRYING, problem.detail + " " + later(problem.retryAfterSeconds || 0));
  }
})();
`.trim();
