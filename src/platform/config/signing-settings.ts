/**
 * Signing's settings: whether the servers sign at all (SIGNING, on by default: the first server to start with no
 * active result key makes one), and the signing key file (SIGNING_KEY_FILE), read and checked at start-up, never
 * quoted in a problem.
 */

import type { KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { signingKeyOfFile } from "../../signing/core/key-file.js";
import type { EnvReader } from "./env-reader.js";

export interface SigningKeyFile {
  /** Where it was read from, for messages. */
  readonly path: string;
  /** The Ed25519 private key; it never leaves memory (a KeyObject prints and serialises without it). */
  readonly privateKey: KeyObject;
}

/** SIGNING_KEY_FILE's key; undefined when unset, or when the file cannot be read or holds no Ed25519 private key. */
export function readSigningKeyFile(read: EnvReader): SigningKeyFile | undefined {
  const path = read.optional("SIGNING_KEY_FILE");
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "an error";
    read.problem(`SIGNING_KEY_FILE cannot be read: "${path}" (${code})`);
    return undefined;
  }
  const privateKey = signingKeyOfFile(text);
  if (privateKey === undefined) {
    read.problem(
      `SIGNING_KEY_FILE must hold an Ed25519 private key as a PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----") or a JWK ({"kty":"OKP","crv":"Ed25519","d":…,"x":…}); "${path}" holds neither`,
    );
    return undefined;
  }
  return { path, privateKey };
}

/** SIGNING: "on" (the default) or "off" (nothing signed, no key made); off with SIGNING_KEY_FILE is a problem. */
export function readSigning(read: EnvReader, keyFile: SigningKeyFile | undefined): "on" | "off" {
  const value = read.text("SIGNING", "on").trim().toLowerCase();
  if (value !== "on" && value !== "off") {
    read.problem(`SIGNING must be on or off, got "${value}"`);
    return "on";
  }
  if (value === "off" && keyFile !== undefined) {
    read.problem("SIGNING=off and SIGNING_KEY_FILE cannot both be set: unset one (SIGNING=off signs nothing)");
  }
  return value;
}
