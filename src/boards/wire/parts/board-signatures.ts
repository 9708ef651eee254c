/**
 * Signed live boards (issue 36 item 3, docs/verify.md "A signed live board"): a caller that asks
 * (`signed=true`) gets each board version with the operator's detached signature over the issuer, the
 * affiliate, the period, the ranking, the version, the entries and when it was signed.
 *
 * A board version is signed **once**, however many viewers ask for it: the signature is kept with the
 * answer every caller of it shares (a live board's snapshot, a cached REST answer's entries: a WeakMap, so it
 * goes when the answer goes) and by the version's content (../../../signing/core/version-signatures.ts, the last 10,000), and the
 * first caller's signing is the one every other caller awaits. `signatures` counts what this instance signed
 * (topwagers_board_signatures_total).
 *
 * What a verifier gets is the `signed` member (over RPC, the SignedBoard message, its `payload` as JSON text):
 * `payload` (the signed JSON object, `iss` included; money as exact decimal strings), `kid`, and `jws`, the
 * compact JWS with its payload left out (RFC 7515 appendix F: `header..signature`). Put the base64url of the
 * RFC 8785 canonical form of `payload` between the two dots and verify it with the live JWK Set
 * (/.well-known/jwks-live.json): the signer is the live one, `typ` live-board+jws (ports/signing.ts LIVE_BOARD_KIND).
 */

import { LIVE_BOARD_KIND, type PayloadSigner } from "../../../ports/signing.js";
import { VersionSignatures } from "../../../signing/core/version-signatures.js";
import type { RankBy } from "../../../values/weights.js";
import type { RankedUser } from "../../core/leaderboard.js";

/** The board a snapshot is of: whose, which inclusive period, ranked by what. */
export interface SignedBoardOf {
  readonly affiliateId: number;
  readonly start: number;
  readonly end: number;
  readonly rankBy: RankBy;
}

/**
 * One computed answer of a board: `key` is the object every caller of that answer shares (a live board's
 * snapshot; a REST answer's cached entries), so the signature is kept as long as the answer is.
 */
export interface SignedVersion {
  readonly key: object;
  readonly ranked: readonly RankedUser[];
  readonly version: string;
}

export interface BoardSignaturesOptions {
  readonly signer: PayloadSigner;
  /** The issuer the signer adds as `iss`, repeated in the answered payload. */
  readonly issuer: string;
  /** The platform's id of an affiliate by its internal key (asked once per affiliate). */
  readonly affiliateName: (affiliateId: number) => Promise<string>;
  /** Current Unix time in seconds. */
  readonly now?: () => number;
}

/** One board version's signature in the parts an RPC message carries (the same signing as the JSON member). */
export interface SignedBoard {
  /** The signed object as JSON text, `iss` included. */
  readonly payload: string;
  readonly kid: string;
  /** The compact JWS with its payload left out: `header..signature`. */
  readonly jws: string;
}

export class BoardSignatures {
  private readonly bySnapshot = new WeakMap<object, Promise<string>>();
  /** The same signatures in parts, read once per answer from its JSON member. */
  private readonly partsBySnapshot = new WeakMap<object, Promise<SignedBoard | null>>();
  /** Versions by board and content, beside the answers that hold them. */
  private readonly versions: VersionSignatures;
  private readonly names = new Map<number, Promise<string>>();

  constructor(private readonly options: BoardSignaturesOptions) {
    this.versions = new VersionSignatures(options);
  }

  /** Board versions this instance signed since it started. */
  get signatures(): number {
    return this.versions.signatures;
  }

  /**
   * The `signed` member of this snapshot's answers as JSON text (`null` while the deployment has no active
   * signing key): signed on the first call, the same text for every later one.
   */
  signedJson(snapshot: SignedVersion, board: SignedBoardOf): Promise<string> {
    let signing = this.bySnapshot.get(snapshot.key);
    if (signing !== undefined) return signing;
    // The same version computed again (another answer object with the same content) keeps its signature too.
    const id = `${board.affiliateId}/${board.start}/${board.end}/${board.rankBy}/${snapshot.ranked.length}/${snapshot.version}`;
    signing = this.versions.signedJson(id, () => this.payload(snapshot, board));
    const { key } = snapshot;
    this.bySnapshot.set(key, signing);
    signing.catch(() => this.bySnapshot.delete(key));
    return signing;
  }

  /**
   * This snapshot's signature in its parts (null while the deployment has no active signing key), for the RPC
   * messages: the very signing `signedJson` gives every wire form, read once per answer.
   */
  signed(snapshot: SignedVersion, board: SignedBoardOf): Promise<SignedBoard | null> {
    let parts = this.partsBySnapshot.get(snapshot.key);
    if (parts === undefined) {
      parts = this.signedJson(snapshot, board).then(signedParts);
      const { key } = snapshot;
      this.partsBySnapshot.set(key, parts);
      parts.catch(() => this.partsBySnapshot.delete(key));
    }
    return parts;
  }

  private async payload(snapshot: SignedVersion, board: SignedBoardOf): Promise<Record<string, unknown>> {
    return {
      type: LIVE_BOARD_KIND.type,
      affiliate: await this.affiliateName(board.affiliateId),
      period: { start: board.start, end: board.end },
      rankBy: board.rankBy,
      version: snapshot.version,
      entries: snapshot.ranked.map((user) => ({
        rank: user.rank,
        username: user.username,
        avatar: user.avatar,
        totalWagered: user.totalWagered,
        weightedWagered: user.weightedWagered,
      })),
      signedAt: (this.options.now ?? (() => Math.floor(Date.now() / 1000)))(),
    };
  }

  private affiliateName(affiliateId: number): Promise<string> {
    let name = this.names.get(affiliateId);
    if (name === undefined) {
      name = this.options.affiliateName(affiliateId);
      this.names.set(affiliateId, name);
      name.catch(() => this.names.delete(affiliateId));
    }
    return name;
  }
}

/** A success envelope (`{"data":[…],"errors":null}`) with the `signed` member added last. */
export function withSigned(envelope: string, signedJson: string): string {
  return `${envelope.slice(0, -1)},"signed":${signedJson}}`;
}

/** A `signed` member's JSON text in its parts; null for `null`. */
function signedParts(json: string): SignedBoard | null {
  if (json === "null") return null;
  const member = JSON.parse(json) as { payload: unknown; kid: string; jws: string };
  return { payload: JSON.stringify(member.payload), kid: member.kid, jws: member.jws };
}
