/**
 * A memo of decoded REST bodies: the fields of a request body (parseJsonObject, then decodeRequestFields),
 * remembered by the body's bytes for the bodies seen lately. Decoding is a pure function of the bytes, and a
 * client site asks the same question again and again. Bounded (the body remembered longest ago goes first);
 * bodies larger than MAX_BYTES, and bodies that are not a JSON object (an error), are decoded every time. What it
 * hands out is frozen: callers share it.
 */
import type { Violation } from "../../../values/violation.js";
import { type DecodedFields, decodeRequestFields, parseJsonObject } from "./period-request-json.js";

export class DecodedBodies {
  static readonly MAX_BYTES = 512;
  // A Map iterates in insertion order: the first key is the oldest.
  private readonly known = new Map<string, DecodedFields>();

  constructor(private readonly maxEntries = 256) {}

  decode(bytes: Buffer): DecodedFields {
    if (bytes.length > DecodedBodies.MAX_BYTES) return decodeRequestFields(parseJsonObject(bytes));
    // The bytes as a key (latin1 maps each byte to one character, so different bodies never share one).
    const key = bytes.toString("latin1");
    const known = this.known.get(key);
    if (known !== undefined) return known;
    const decoded = decodeRequestFields(parseJsonObject(bytes));
    const frozen = Object.freeze({
      signed: decoded.signed,
      values: Object.freeze(decoded.values),
      violations: Object.freeze(decoded.violations.map((v) => Object.freeze(v))) as Violation[],
    });
    this.known.set(key, frozen);
    if (this.known.size > this.maxEntries) {
      const oldest = this.known.keys().next();
      if (oldest.done !== true) this.known.delete(oldest.value);
    }
    return frozen;
  }
}
