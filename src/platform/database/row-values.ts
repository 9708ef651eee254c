/**
 * Reading a column of a row mysql2 returned when SQL NULL (or a column the statement did not
 * select) is to be null: numbers as JavaScript numbers, text as a string (a BLOB/VARBINARY column
 * arrives as a Buffer and is read as UTF-8).
 */
export const numberOrNull = (value: unknown): number | null =>
  value === null || value === undefined ? null : Number(value);

export const textOrNull = (value: unknown): string | null =>
  value === null || value === undefined ? null : Buffer.isBuffer(value) ? value.toString("utf8") : String(value);
