/** Tables the CLI prints (`keys list`, `webhooks list`, `races list`, …): plain text in aligned columns. */

/** Rows of text as columns as wide as their widest cell, two spaces apart; the last column unpadded. */
export function alignColumns(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => [...(row[column] ?? "")].length))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, column) =>
          column === row.length - 1 ? cell : cell + " ".repeat((widths[column] ?? 0) - [...cell].length),
        )
        .join("  ")
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join("");
}
