/**
 * The picture of docs/resilience.md (scripts/load/chart.ts, plot.ts): its axes, the sum of the
 * processes' limits, and the SVG it writes, from figures made up here.
 */
import { describe, expect, it } from "vitest"
import { axisOf, niceCeiling, svgOf } from "../scripts/load/chart.js"
import { sumOf } from "../scripts/load/plot.js"

describe("the load scenarios' picture", () => {
  it("an axis reaches past the largest value in whole nice steps", () => {
    expect([0, 0.3, 1, 3, 7, 11, 45, 400].map(niceCeiling)).toEqual([1, 0.5, 1, 5, 10, 20, 50, 500])
    expect(axisOf(26.1, 10)).toEqual({ top: 30, step: 5 })
    expect(axisOf(400)).toEqual({ top: 400, step: 100 })
    expect(axisOf(17)).toEqual({ top: 20, step: 5 })
    expect(axisOf(0)).toEqual({ top: 1, step: 1 })
  })

  it("the processes' limits add up at every time any of them changed, each holding until its next point", () => {
    expect(sumOf([[[0, 4], [2, 2]], [[1, 3], [3, 5]]])).toEqual([[0, 4], [1, 7], [2, 5], [3, 7]])
    expect(sumOf([])).toEqual([])
  })

  it("writes one polyline a series, a legend entry for each named one, the windows shaded, its text escaped", () => {
    const svg = svgOf({
      title: "a <title> & more",
      xLabel: "seconds",
      leftLabel: "requests a second",
      rightLabel: "requests at once",
      series: [
        { label: "answered", color: "#2a7", axis: "left", points: [[0, 0], [1, 400], [2, 200]] },
        { label: "", color: "#99c", axis: "right", points: [[0, 1], [2, 3]], step: true },
        { label: "limit", color: "#24c", axis: "right", points: [[0, 4], [2, 8]], step: true, dashed: true }
      ],
      windows: [{ from: 0.5, to: 1.5, label: "outage" }]
    })
    expect(svg.startsWith("<svg xmlns=\"http://www.w3.org/2000/svg\"")).toBe(true)
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true)
    expect(svg.match(/<polyline /g)).toHaveLength(3)
    // A step series has a corner at each change: two points for each after the first.
    const stepped = svg.match(/<polyline [^>]*stroke="#99c"[^>]*points="([^"]*)"/)![1]!.split(" ")
    expect(stepped).toHaveLength(3)
    expect(svg).toContain("answered (left)")
    expect(svg).toContain("limit (right)")
    expect(svg.match(/ \((left|right)\)<\/text>/g)).toHaveLength(2)
    expect(svg).toContain("a &lt;title&gt; &amp; more")
    expect(svg).toContain(">outage</text>")
    expect(svg).toContain("stroke-dasharray=\"6 4\"")
  })
})
