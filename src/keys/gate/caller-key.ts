/**
 * The caller of an RPC on the public port: the request gate (apps/public-skins.ts) sets it once the API key is
 * authenticated and counted; the RPC skins read it.
 */
import { createContextKey } from "@connectrpc/connect";
import type { Caller } from "../core/caller.js";

/** Set by the request gate once the key is authenticated and counted. */
export const callerKey = createContextKey<Caller | undefined>(undefined, { description: "authenticated caller" });
