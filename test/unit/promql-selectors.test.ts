/**
 * test/support/promql.ts reads selectors from PromQL's syntax tree: metric names and matchers only, whatever the
 * functions, aggregations, groupings, offsets and strings around them; a malformed expression throws.
 */
import { describe, expect, it } from "vitest";
import { selectorsOf } from "../support/promql.js";

describe("selectorsOf", () => {
  it("finds each selector's metric and matchers, and nothing else", () => {
    const expr =
      'sum by (job, le) (rate(topwagers_rpc_call_duration_seconds_bucket{job="topwagers",le="0.25"}[5m] offset 1m))' +
      ' / on (instance) group_left (version) topwagers_build_info > bool 0 and absent(up{job=~"a|b"} == 1)' +
      ' or count_values("value", {__name__="topwagers_streams",protocol!="sse"}) unless max(rate(x:y:z[1h]))';
    expect(selectorsOf(expr)).toEqual([
      {
        metric: "topwagers_rpc_call_duration_seconds_bucket",
        matchers: [
          { label: "job", op: "=", value: "topwagers" },
          { label: "le", op: "=", value: "0.25" },
        ],
      },
      { metric: "topwagers_build_info", matchers: [] },
      { metric: "up", matchers: [{ label: "job", op: "=~", value: "a|b" }] },
      { metric: "topwagers_streams", matchers: [{ label: "protocol", op: "!=", value: "sse" }] },
      { metric: "x:y:z", matchers: [] },
    ]);
  });

  it("reads single-quoted and raw strings, and a selector by labels only", () => {
    expect(selectorsOf("{job='a\\'b', code!~`5..`}")).toEqual([
      {
        metric: undefined,
        matchers: [
          { label: "job", op: "=", value: "a'b" },
          { label: "code", op: "!~", value: "5.." },
        ],
      },
    ]);
  });

  it("throws on what does not parse", () => {
    expect(() => selectorsOf("sum(rate(foo[5m])")).toThrow("PromQL does not parse");
    expect(() => selectorsOf('foo{job="a"')).toThrow("PromQL does not parse");
  });
});
