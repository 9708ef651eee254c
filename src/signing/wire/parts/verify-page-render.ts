/**
 * The verify page's showing of a checked result, as a part of the page's one inline script: the facts (issuer,
 * key, race, affiliate, period, rules, when frozen, digest, chain, place in the log), the standings with the verdict
 * as their caption, the prize table with who won each place, what is unallocated, each change to the race with its
 * before and after values (the excluded users as counts), and what voids, late wagers and exclusions did. Called
 * only once every check passed; every value is set as text. `checked` lists what the page checked against (shown
 * whatever the verdict: the operator, the log's key and its fingerprint), never the payload.
 */

export const RENDER = String.raw`
  const when = (s) => new Date(s * 1000).toISOString().replace(".000Z", "Z");
  const fact = (list, name, value) => {
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = String(value);
    $(list).append(dt, dd);
  };
  const checked = (name, value) => fact("checks", name, value);
  const row = (table, cells, numeric = []) => {
    const tr = $(table).tBodies[0].insertRow();
    cells.forEach((cell, i) => {
      const td = tr.insertCell();
      td.textContent = String(cell);
      if (numeric.includes(i)) td.className = "n";
    });
  };
  const TIMES = ["startTimestamp", "endTimestamp"];
  const valueText = (field, v) => v === undefined || v === null ? "(none)"
    : Array.isArray(v) ? (v.length === 0 ? "(none)" : v.join(", "))
    : TIMES.includes(field) && typeof v === "number" ? when(v) : JSON.stringify(v);
  const changeText = (f) => f.field === "excludedUserIds"
    ? "excluded users: " + (f.added || []).length + " added, " + (f.removed || []).length + " removed"
    : f.field + ": " + valueText(f.field, f.before) + " \u2192 " + valueText(f.field, f.after);
  const moved = (ranks) => (ranks && ranks.length ? "; ranks moved: " + ranks.join(", ") : "; no rank moved");
  const ordinal = (n) => n + (n % 10 === 1 && n % 100 !== 11 ? "st" : n % 10 === 2 && n % 100 !== 12 ? "nd" : n % 10 === 3 && n % 100 !== 13 ? "rd" : "th");

  const renderFacts = (header, p, place) => {
    fact("facts", "Issuer", p.iss);
    fact("facts", "Key id", header.kid);
    fact("facts", "Race", p.title + " (" + p.raceId + ")");
    fact("facts", "Affiliate", p.affiliateId);
    fact("facts", "Period", when(p.period.startsAt) + " to " + when(p.period.endsAt) + " (" + p.timeZone + ")");
    fact("facts", "Rules", "ranked by " + p.rankBy + ", at least " + p.minWagered + " " + p.currency + " wagered");
    fact("facts", "Frozen at", when(p.frozenAt));
    fact("facts", "Digest", p.digest);
    const prev = p.chain.previous;
    fact("facts", "Chain", "#" + p.chain.sequence + (prev === null ? ", the affiliate's first signed result" : ", follows " + prev.raceId + " (sha256 " + prev.sha256 + ")"));
    fact("facts", "Log", "result #" + (place.index + 1) + " of " + place.tree.size + " in " + place.tree.origin + "'s log");
  };

  const renderTables = (p) => {
    const weighted = p.rankBy !== "wagered";
    for (const e of p.entries) {
      const total = e.totalWageredDecimal + " " + p.currency + (weighted ? " (weighted " + e.weightedWageredDecimal + ")" : "");
      row("standings", [e.rank, e.username, total, e.prize], [0, 2, 3]);
    }
    if (p.entries.length === 0) row("standings", ["", "No one placed", "", ""]);
    p.prizes.forEach((prize, i) => {
      const won = p.entries.filter((e) => e.rank === i + 1).map((e) => e.username).join(", ");
      row("prizes", [ordinal(i + 1), prize + " " + p.currency, won || "no one"], [1]);
    });
    $("unallocated").textContent = "Unallocated: " + p.unallocated + " " + p.currency + " (prizes no one won).";
  };

  const renderHistory = (p) => {
    const h = p.historySummary;
    if (!h) return;
    for (const c of h.entries) {
      const by = c.actor.kind + (c.actor.id ? " " + c.actor.id : "");
      row("history", [when(c.at), c.kind, by, c.fields.map(changeText).join("; ") || "\u2014"]);
    }
    const note = (text) => { const line = document.createElement("p"); line.className = "note"; line.textContent = text; $("notes").append(line); };
    const exclusions = h.entries.flatMap((c) => c.fields.filter((f) => f.field === "excludedUserIds"));
    const added = exclusions.reduce((n, f) => n + (f.added || []).length, 0);
    const removed = exclusions.reduce((n, f) => n + (f.removed || []).length, 0);
    note("Users excluded by changes after the race was made: " + (added - removed) + " (" + added + " added, " + removed + " removed).");
    const s = h.standings;
    note("Voids: " + s.voidedWagers + " voided wagers of " + s.usersAffected + " users while live or in review" + moved(s.ranksMoved) + ".");
    const late = s.lateWagers;
    note(late ? "Late wagers: " + late.wagers + " dated in the race, recorded after its end and before its freeze, of " + late.usersAffected + " users" + moved(late.ranksMoved) + "."
      : "Late wagers: not counted in this result (signed before they were counted).");
  };

  const render = (header, p, place) => {
    $("seal").textContent = "\u2713 Result #" + (place.index + 1) + " of " + place.tree.size + " in " + place.tree.origin + "'s log \u00b7 signed by " + p.iss;
    renderFacts(header, p, place);
    renderTables(p);
    renderHistory(p);
    checked("Inclusion proof", place.hashes + (place.hashes === 1 ? " hash" : " hashes") + " to the root of the checkpoint of " + place.tree.size + ", checked in " + place.proofMs.toFixed(1) + " ms");
    document.body.dataset.proofMs = String(place.proofMs);
    document.body.dataset.logMs = String(place.logMs);
    $("result").hidden = false;
  };
`;
