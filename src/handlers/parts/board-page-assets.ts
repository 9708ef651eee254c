/**
 * The overlay page's style and script (src/handlers/board-page.ts serves them
 * inline, allowed by their hashes in the page's Content-Security-Policy).
 *
 * The script reads its settings from the page's JSON block, follows the SSE
 * stream with EventSource (which reconnects by itself with Last-Event-ID),
 * and builds every row with DOM calls and textContent: usernames and avatars
 * come from players and are never parsed as HTML. Totals are formatted from
 * the exact decimal text of the event, never through a float.
 */

export const OVERLAY_STYLE = `
:root{color-scheme:dark;--fg:#f5f7fa;--muted:#9aa4b2;--bg:#0f1218;--row:#1a1f29;--line:#2a3140;--gold:#f5c542;--silver:#c9d1dc;--bronze:#d08a4e;--live:#36d67a;--warn:#ffb020;--shadow:none}
body.theme-light{color-scheme:light;--fg:#10141b;--muted:#5b6473;--bg:#f4f6f9;--row:#fff;--line:#dde2ea;--gold:#b8860b;--silver:#6b7686;--bronze:#a0522d}
body.theme-transparent{--bg:transparent;--row:rgba(10,12,18,.55);--line:rgba(255,255,255,.12);--shadow:0 1px 3px rgba(0,0,0,.9)}
*{box-sizing:border-box}
html,body{margin:0;background:var(--bg)}
body{color:var(--fg);font:500 clamp(14px,2.6vmin,34px)/1.25 system-ui,-apple-system,"Segoe UI",Roboto,Ubuntu,sans-serif;text-shadow:var(--shadow);padding:clamp(8px,2vmin,32px)}
.board{max-width:46em;margin:0 auto}
header{display:flex;align-items:baseline;gap:.6em;flex-wrap:wrap;margin-bottom:.6em}
h1{font-size:1.3em;margin:0;font-weight:800;letter-spacing:.02em}
.period{margin:0;color:var(--muted);font-size:.8em;flex:1}
.status{font-size:.7em;text-transform:uppercase;letter-spacing:.08em;color:var(--muted)}
.status::before{content:"";display:inline-block;width:.6em;height:.6em;border-radius:50%;margin-right:.4em;background:var(--muted)}
.status.live::before{background:var(--live)}
.status.retrying::before{background:var(--warn)}
.message{margin:.4em 0 .8em;padding:.6em .8em;border-radius:.4em;background:var(--row);border-left:.25em solid var(--warn);font-size:.85em}
.list{list-style:none;margin:0;padding:0;display:grid;gap:.35em}
.row{display:grid;grid-template-columns:2.2em 2.2em minmax(0,1fr) auto;align-items:center;gap:.6em;padding:.45em .7em;border-radius:.45em;background:var(--row);border:1px solid var(--line);transition:background .6s}
.row.bump{background:rgba(54,214,122,.28)}
.rank{font-weight:800;text-align:center;font-variant-numeric:tabular-nums}
.row:nth-child(1) .rank{color:var(--gold)}
.row:nth-child(2) .rank{color:var(--silver)}
.row:nth-child(3) .rank{color:var(--bronze)}
.avatar{width:2.2em;height:2.2em;border-radius:50%;overflow:hidden;background:var(--line)}
.avatar img{width:100%;height:100%;object-fit:cover;opacity:0;transition:opacity .3s}
.avatar img.ready{opacity:1}
.name{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.total{font-weight:700;font-variant-numeric:tabular-nums;text-align:right}
.empty{color:var(--muted);text-align:center;padding:1em}
@media (max-width:480px){body{font-size:15px}.row{grid-template-columns:1.8em 2em minmax(0,1fr) auto;gap:.45em}}
`.trim();

export const OVERLAY_SCRIPT = `
(() => {
  "use strict";
  const config = JSON.parse(document.getElementById("config").textContent);
  const list = document.getElementById("list");
  const empty = document.getElementById("empty");
  const status = document.getElementById("status");
  const message = document.getElementById("message");
  let source;
  let retryMs = 2000;
  let shown = new Map();

  const setStatus = (state, text) => {
    status.className = "status " + state;
    status.textContent = text;
  };
  const say = (text) => {
    message.textContent = text;
    message.hidden = text === "";
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
    const pattern = /"totalWagered":([0-9.]+)(?:,"weightedWagered":([0-9.]+))?/g;
    for (let m = pattern.exec(data); m !== null; m = pattern.exec(data)) {
      totals.push(config.rankBy !== "wagered" && m[2] !== undefined ? m[2] : m[1]);
    }
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
  };

  // EventSource gives up on an HTTP error (a revoked key, a limit): ask once to show why, then try again later.
  const explain = async () => {
    setStatus("retrying", "offline");
    try {
      const stop = new AbortController();
      const response = await fetch(config.stream, { cache: "no-store", signal: stop.signal });
      if (response.ok) stop.abort();
      else {
        const body = await response.json();
        say((body.errors && body.errors[0] && body.errors[0].message) || "HTTP " + response.status);
      }
    } catch {
      say("The leaderboard cannot be reached. Retrying.");
    }
    setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, 60000);
  };

  const connect = () => {
    source = new EventSource(config.stream);
    source.addEventListener("open", () => {
      setStatus("live", "live");
      retryMs = 2000;
    });
    source.addEventListener("board", (event) => {
      say("");
      render(event.data);
    });
    source.addEventListener("error", () => {
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        void explain();
      } else setStatus("retrying", "reconnecting");
    });
  };
  connect();
})();
`.trim();
