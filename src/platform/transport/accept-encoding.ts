/**
 * Content-coding negotiation for the bodies we compress (REST answers, the
 * docs page): does the client's Accept-Encoding accept gzip? One rule for
 * every response (RFC 9110 §12.5.3): an explicit `gzip` entry decides by its
 * q-value; otherwise `*` decides; otherwise no. So `gzip;q=0, *` refuses gzip,
 * and `*` alone accepts it.
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  const value = Array.isArray(header) ? header.join(",") : header;
  let wildcard: boolean | undefined;
  for (const part of value.split(",")) {
    const [coding = "", ...params] = part.trim().toLowerCase().split(";");
    const name = coding.trim();
    if (name !== "gzip" && name !== "*") continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    const accepted = q === undefined || Number(q.slice(2)) > 0;
    if (name === "gzip") return accepted;
    wildcard = accepted;
  }
  return wildcard ?? false;
}
