/** A race's public id: "race_" and 20 characters of base32 (100 random bits), made by the server. */
import { randomBytes } from "node:crypto";

const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";

export function randomRaceId(): string {
  const bytes = randomBytes(20);
  let text = "race_";
  for (const byte of bytes) text += ALPHABET[byte & 31];
  return text;
}

/** Whether a text has the shape of a race id (a slug never starts with "race_"). */
export function isRaceId(text: string): boolean {
  return /^race_[a-z2-7]{20}$/.test(text);
}
