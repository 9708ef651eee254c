/**
 * The verify page's style sheet (inline in the page, allowed by its hash in the page's Content-Security-Policy):
 * the verdict's states (checking, valid, pending, invalid, none), the form, the facts, the tables. The standings
 * carry the verdict as their caption, so that no crop of them leaves it out; they are shown only when valid.
 */

export const VERIFY_STYLE = `
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:56rem;padding:1rem;color:#111;background:#fafafa}
h1{font-size:1.3rem;margin:.2rem 0 .8rem}h2{font-size:1.05rem;margin:1.4rem 0 .4rem}
#status{font-size:1.1rem;font-weight:700;padding:.7rem .9rem;border-radius:.4rem;background:#e8e8e8;color:#222;border-left:.5rem solid #999;overflow-wrap:anywhere}
#status[data-state=valid]{background:#d9f5dd;color:#0b5d1e;border-color:#1a8a3a}
#status[data-state=invalid]{background:#fde0e0;color:#8a1010;border-color:#c62828}
#status[data-state=pending]{background:#fff1cc;color:#5c4200;border-color:#c89400}
#status[data-state=valid]::before{content:"\\2713  "}#status[data-state=invalid]::before{content:"\\2717  "}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.2rem 1rem;margin:.6rem 0}
dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
#checks{font-size:.85rem;color:#333;border:1px solid #ddd;border-radius:.4rem;padding:.5rem .7rem;background:#fff}
table{border-collapse:collapse;width:100%;background:#fff}
td,th{border-bottom:1px solid #ddd;padding:.3rem .45rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f0f0f0}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
caption{caption-side:top;text-align:left;font-weight:700;padding:.45rem .6rem;background:#d9f5dd;color:#0b5d1e;border-left:.5rem solid #1a8a3a}
#standings{border:2px solid #1a8a3a}
.note{color:#333;margin:.3rem 0}
form{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.4rem .6rem;align-items:center;margin:1.2rem 0;padding:.7rem;border:1px solid #ddd;border-radius:.4rem;background:#fff}
form input{font:inherit;padding:.3rem .4rem;min-width:0}form button{grid-column:2;justify-self:start;font:inherit;padding:.35rem 1rem}
@media (max-width:30rem){dl,form{grid-template-columns:minmax(0,1fr)}form button{grid-column:1}dt{margin-top:.3rem}}
`;
