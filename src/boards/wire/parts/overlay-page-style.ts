/**
 * The overlay page's style sheet (src/boards/wire/overlay-page.ts serves it inline, allowed by its hash in the page's
 * Content-Security-Policy): the dark, light and transparent themes, the board's rows and a race's prize columns.
 * The elements and classes it styles are the page's (overlay-page.ts) and the script's (overlay-page-assets.ts).
 * Every text keeps a contrast of 4.5:1 or more in every theme and state (WCAG 2), a changed row's flash included:
 * the flash (`bump`, 1.2 s) goes from the theme's `--bump`, a background dark (or, in the light theme, pale) enough
 * for every text of a row, back to the row's own, with a bar in the live colour at its left edge that fades with it
 * (test/e2e/race-overlay-states.test.ts measures each state and nine frames of the flash in each theme).
 */

export const OVERLAY_STYLE = `
:root{color-scheme:dark;--fg:#f5f7fa;--muted:#9aa4b2;--bg:#0f1218;--row:#1a1f29;--bump:#0e3322;--line:#2a3140;--gold:#f5c542;--silver:#c9d1dc;--bronze:#d08a4e;--live:#36d67a;--warn:#ffb020;--review:#7fb2ff;--shadow:none;--panel:transparent}
:root.theme-light{color-scheme:light;--fg:#10141b;--muted:#5b6473;--bg:#f4f6f9;--row:#fff;--bump:#e3f8ec;--line:#dde2ea;--gold:#8a6508;--silver:#5f6a79;--bronze:#a0522d;--review:#2f5fb3}
:root.theme-transparent{color-scheme:normal;--bg:transparent;--muted:#cfd6e0;--bronze:#eaa66c;--row:rgba(10,12,18,.8);--bump:rgba(10,60,36,.95);--panel:rgba(10,12,18,.8);--line:rgba(255,255,255,.14);--shadow:0 1px 2px rgba(0,0,0,.95)}
*{box-sizing:border-box}
html{background:var(--bg);font-size:16px}
body{margin:0;background:transparent;color:var(--fg);font:500 1rem/1.25 system-ui,-apple-system,"Segoe UI",Roboto,Ubuntu,sans-serif;text-shadow:var(--shadow);padding:.5em .6em}
.board{max-width:46em;margin:0 auto}
header{display:flex;align-items:baseline;gap:.6em;flex-wrap:wrap;margin-bottom:.45em;background:var(--panel);border-radius:.45em}
.theme-transparent header{padding:.3em .6em}
h1{font-size:1.25em;margin:0;font-weight:800;letter-spacing:.02em;min-width:0;max-width:100%;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.period{margin:0;color:var(--muted);font-size:.8em;flex:1}
.mark{margin:0 0 .45em;color:var(--gold);font-size:.75em;font-weight:700;overflow-wrap:anywhere}
.status{font-size:.7em;text-transform:uppercase;letter-spacing:.08em;color:var(--muted)}
.status::before{content:"";display:inline-block;width:.6em;height:.6em;border-radius:50%;margin-right:.4em;background:var(--muted)}
.status.live::before{background:var(--live)}
.status.retrying::before{background:var(--warn)}
.status.reviewing::before{background:var(--review)}
.status.final::before{background:var(--gold)}
.status.cancelled::before{background:transparent;border:1px solid var(--muted)}
.message{margin:.3em 0 .5em;padding:.45em .7em;border-radius:.4em;background:var(--row);border-left:.25em solid var(--warn);font-size:.85em}
.detail{margin:0 0 .5em;padding:0 .7em;color:var(--muted);font-size:.7em;overflow-wrap:anywhere}
.list{list-style:none;margin:0;padding:0;display:grid;gap:.3em}
.row{display:grid;grid-template-columns:2em 1.8em minmax(0,1fr) auto;align-items:center;gap:.55em;padding:.3em .6em;border-radius:.45em;background:var(--row);border:1px solid var(--line)}
.row.bump{animation:bump 1.2s ease-out}
@keyframes bump{from{background-color:var(--bump);box-shadow:inset .3em 0 0 var(--live)}to{background-color:var(--row);box-shadow:inset .3em 0 0 transparent}}
.rank{font-weight:800;text-align:center;font-variant-numeric:tabular-nums}
.row[data-rank="1"] .rank{color:var(--gold)}
.row[data-rank="2"] .rank{color:var(--silver)}
.row[data-rank="3"] .rank{color:var(--bronze)}
.avatar{width:1.8em;height:1.8em;border-radius:50%;overflow:hidden;background:var(--line)}
.avatar img{width:100%;height:100%;object-fit:cover;opacity:0;transition:opacity .3s}
.avatar img.ready{opacity:1}
.name{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.total{font-weight:700;font-variant-numeric:tabular-nums;text-align:right}
.empty{color:var(--muted);text-align:center;padding:1em;background:var(--panel);border-radius:.45em}
.next{margin:0 0 .45em;color:var(--muted);font-size:.75em;background:var(--panel);border-radius:.4em;justify-self:start;width:fit-content}
.theme-transparent .next{padding:.2em .6em}
.theme-transparent .detail{background:var(--panel)}
.race .period{white-space:nowrap;font-variant-numeric:tabular-nums}
.race .row{grid-template-columns:2em 1.8em minmax(0,1fr) minmax(5em,auto) minmax(8.5em,auto)}
.race .total{font-weight:500;color:var(--muted);font-size:.85em}
.prize{font-weight:800;text-align:right;color:var(--gold);font-variant-numeric:tabular-nums}
.prize-row .avatar{visibility:hidden}
.race .prize-row{grid-template-columns:2em 1.8em minmax(0,1fr) minmax(8.5em,auto)}
.race .prize-row .total{display:none}
.race[data-state=cancelled] .list{display:none}
.race[data-state=final] .period{color:var(--gold);font-weight:700}
@media (max-width:30em){.race .row{grid-template-columns:2em 1.8em minmax(0,1fr) minmax(6em,auto)}.race .total{display:none}}
`.trim();
