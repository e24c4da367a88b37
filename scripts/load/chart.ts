/**
 * A line chart as SVG text, with no dependency: time along x, two value axes (requests a second on
 * the left, requests at once on the right), shaded windows. Pure: the figures of a load scenario
 * in, the picture out (`plot.ts` writes it to docs/images/).
 */

/** One line: `[x, y]` points in order of x. */
export interface Series {
  /** Its name in the legend; an empty one is left out of the legend. */
  readonly label: string
  readonly color: string
  readonly points: ReadonlyArray<readonly [number, number]>
  readonly axis: "left" | "right"
  /** Drawn as steps (a value that holds until the next point) rather than straight segments. */
  readonly step?: boolean | undefined
  readonly width?: number | undefined
  readonly dashed?: boolean | undefined
}

export interface Chart {
  readonly title: string
  readonly xLabel: string
  readonly leftLabel: string
  readonly rightLabel: string
  readonly series: ReadonlyArray<Series>
  /** Windows of x to shade, each with a label (an outage, say). */
  readonly windows?: ReadonlyArray<{ readonly from: number; readonly to: number; readonly label: string }>
}

const WIDTH = 860
const HEIGHT = 380
const MARGIN = { left: 64, right: 64, top: 40, bottom: 96 }

/** The smallest of 1, 2, 5 x 10^n at least `value`, 1 for nothing. */
export const niceCeiling = (value: number): number => {
  if (!(value > 0)) return 1
  const power = 10 ** Math.floor(Math.log10(value))
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power
  return 10 * power
}

/** Ticks of an axis reaching `value`: a nice step, and the top as a whole number of steps. */
export const axisOf = (value: number, ticks = 5): { readonly top: number; readonly step: number } => {
  const step = niceCeiling(value / ticks)
  return { top: Math.max(1, Math.ceil(value / step)) * step, step }
}

const escapeXml = (text: string): string =>
  text.replace(/[<>&"']/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", "\"": "&quot;", "'": "&apos;" })[c]!)

const round = (n: number) => Math.round(n * 10) / 10

const maxOf = (series: ReadonlyArray<Series>, pick: (point: readonly [number, number]) => number) =>
  Math.max(0, ...series.flatMap((s) => s.points.map(pick)))

/** The chart as an SVG document. */
export const svgOf = (chart: Chart): string => {
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom
  const x = axisOf(maxOf(chart.series, ([at]) => at), 10)
  // The two value axes share their grid lines: as many ticks on each.
  const left = axisOf(maxOf(chart.series.filter((s) => s.axis === "left"), ([, y]) => y))
  const right = axisOf(maxOf(chart.series.filter((s) => s.axis === "right"), ([, y]) => y))
  const ticks = Math.max(left.top / left.step, right.top / right.step)
  const xMax = x.top
  const yMax = { left: left.step * ticks, right: right.step * ticks }
  const px = (x: number) => round(MARGIN.left + (x / xMax) * plotWidth)
  const py = (y: number, axis: "left" | "right") => round(MARGIN.top + plotHeight - (y / yMax[axis]) * plotHeight)
  const out: Array<string> = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${WIDTH / 2}" y="22" text-anchor="middle" font-size="14">${escapeXml(chart.title)}</text>`
  ]
  for (const window of chart.windows ?? []) {
    const from = px(window.from)
    out.push(
      `<rect x="${from}" y="${MARGIN.top}" width="${
        round(px(window.to) - from)
      }" height="${plotHeight}" fill="#f3e0e0"/>`,
      `<text x="${round((from + px(window.to)) / 2)}" y="${MARGIN.top + 14}" text-anchor="middle" fill="#844">${
        escapeXml(window.label)
      }</text>`
    )
  }
  for (let i = 0; i <= ticks; i++) {
    const y = round(MARGIN.top + plotHeight - (i / ticks) * plotHeight)
    out.push(
      `<line x1="${MARGIN.left}" y1="${y}" x2="${MARGIN.left + plotWidth}" y2="${y}" stroke="#ddd"/>`,
      `<text x="${MARGIN.left - 6}" y="${y + 4}" text-anchor="end">${round(left.step * i)}</text>`,
      `<text x="${MARGIN.left + plotWidth + 6}" y="${y + 4}">${round(right.step * i)}</text>`
    )
  }
  for (let at = 0; at <= xMax; at += x.step) {
    out.push(`<text x="${px(at)}" y="${MARGIN.top + plotHeight + 16}" text-anchor="middle">${round(at)}</text>`)
  }
  out.push(
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotWidth}" height="${plotHeight}" fill="none" stroke="#888"/>`,
    `<text x="${MARGIN.left + plotWidth / 2}" y="${MARGIN.top + plotHeight + 34}" text-anchor="middle">${
      escapeXml(chart.xLabel)
    }</text>`,
    `<text transform="translate(16 ${MARGIN.top + plotHeight / 2}) rotate(-90)" text-anchor="middle">${
      escapeXml(chart.leftLabel)
    }</text>`,
    `<text transform="translate(${WIDTH - 12} ${MARGIN.top + plotHeight / 2}) rotate(90)" text-anchor="middle">${
      escapeXml(chart.rightLabel)
    }</text>`
  )
  for (const series of chart.series) {
    const points: Array<string> = []
    let previous: readonly [number, number] | undefined
    for (const point of series.points) {
      if (series.step === true && previous !== undefined) points.push(`${px(point[0])},${py(previous[1], series.axis)}`)
      points.push(`${px(point[0])},${py(point[1], series.axis)}`)
      previous = point
    }
    out.push(
      `<polyline fill="none" stroke="${series.color}" stroke-width="${series.width ?? 1.5}"${
        series.dashed === true ? " stroke-dasharray=\"6 4\"" : ""
      } points="${points.join(" ")}"/>`
    )
  }
  // The legend under the axis label, in as many rows as it takes.
  let legendX = MARGIN.left
  let legendY = MARGIN.top + plotHeight + 56
  for (const series of chart.series) {
    if (series.label === "") continue
    const label = `${series.label} (${series.axis === "left" ? "left" : "right"})`
    const width = 30 + label.length * 6.2
    if (legendX + width > WIDTH - MARGIN.right) {
      legendX = MARGIN.left
      legendY += 18
    }
    out.push(
      `<line x1="${legendX}" y1="${legendY - 4}" x2="${legendX + 18}" y2="${
        legendY - 4
      }" stroke="${series.color}" stroke-width="${series.width ?? 1.5}"${
        series.dashed === true ? " stroke-dasharray=\"6 4\"" : ""
      }/>`,
      `<text x="${legendX + 22}" y="${legendY}">${escapeXml(label)}</text>`
    )
    legendX += width
  }
  out.push("</svg>")
  return `${out.join("\n")}\n`
}
