/**
 * The series selectors of a PromQL expression, read from its syntax tree (the Prometheus project's own Lezer
 * grammar, @prometheus-io/lezer-promql, which its web UI parses with), not matched by a pattern: what metric each
 * selector names and with which label matchers. Function names, aggregations, `by (...)` labels, durations and
 * strings are never taken for metric names. An expression that does not parse throws, naming where.
 */
import type { SyntaxNode } from "@lezer/common";
import { parser } from "@prometheus-io/lezer-promql";

export type MatchOp = "=" | "!=" | "=~" | "!~";

export interface LabelMatcher {
  readonly label: string;
  readonly op: MatchOp;
  readonly value: string;
}

export interface Selector {
  /** The metric name (also when given as `{__name__="…"}`), or undefined for a selector by labels only. */
  readonly metric: string | undefined;
  /** The matchers other than the metric name's. */
  readonly matchers: readonly LabelMatcher[];
}

const OPS: Readonly<Record<string, MatchOp>> = { EqlSingle: "=", Neq: "!=", EqlRegex: "=~", NeqRegex: "!~" };

/** Every series selector of `expr`, in the order they appear. */
export function selectorsOf(expr: string): Selector[] {
  const tree = parser.parse(expr);
  const found: Selector[] = [];
  tree.iterate({
    enter(node) {
      if (node.type.isError) {
        throw new Error(`PromQL does not parse at ${node.from}: …${expr.slice(node.from, node.from + 40)}… in ${expr}`);
      }
    },
  });
  tree.iterate({
    enter(node) {
      if (node.name !== "VectorSelector") return;
      found.push(selector(node.node, expr));
      return false;
    },
  });
  return found;
}

function selector(node: SyntaxNode, expr: string): Selector {
  const text = (n: SyntaxNode) => expr.slice(n.from, n.to);
  let metric = node.getChild("Identifier") === null ? undefined : text(node.getChild("Identifier") as SyntaxNode);
  const matchers: LabelMatcher[] = [];
  for (const list of node.getChildren("LabelMatchers")) {
    for (let child = list.firstChild; child !== null; child = child.nextSibling) {
      if (child.name === "QuotedLabelName") {
        metric = stringValue(text(child.getChild("StringLiteral") as SyntaxNode));
        continue;
      }
      if (child.name !== "UnquotedLabelMatcher" && child.name !== "QuotedLabelMatcher") continue;
      const name = child.getChild("LabelName") ?? child.getChild("QuotedLabelName")?.getChild("StringLiteral");
      const op = child.getChild("MatchOp")?.firstChild?.name;
      const value = child.getChildren("StringLiteral").at(-1);
      if (name == null || op === undefined || value === undefined)
        throw new Error(`a matcher I cannot read in ${expr}`);
      const label = name.name === "StringLiteral" ? stringValue(text(name)) : text(name);
      const matcher = { label, op: OPS[op] as MatchOp, value: stringValue(text(value)) };
      if (label === "__name__" && matcher.op === "=") metric = matcher.value;
      else matchers.push(matcher);
    }
  }
  return { metric, matchers };
}

/** A PromQL string literal's value: "…" or '…' with \\, \" and \' escapes, or `…` taken as it is. */
function stringValue(literal: string): string {
  const quote = literal[0];
  const inner = literal.slice(1, -1);
  if (quote === "`") return inner;
  return inner.replace(/\\(.)/g, (_, escaped: string) => {
    if (escaped === "\\" || escaped === '"' || escaped === "'") return escaped;
    throw new Error(`an escape these checks do not read: \\${escaped} in ${literal}`);
  });
}
