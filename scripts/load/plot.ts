/**
 * The picture of docs/resilience.md: a load scenario run for real (`scenarios.ts`), with each client
 * process's concurrency limit read every 50 ms, drawn against what the service saw each 100 ms.
 *
 *   npm run load:plot -- [--only 2,3,7] [--persons 3000] [--out-dir docs/images]
 *
 * Writes `load-<scenario>.svg` for each scenario and prints its figures.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { BUCKET_MILLIS } from "./capacityPlan.js"
import { type Chart, type Series, svgOf } from "./chart.js"
import { FULL, K, observe, type Observed, type Scenario, scenarios, windowOf } from "./scenarios.js"

const perSecond = 1000 / BUCKET_MILLIS

/** The scenario's picture: the service's answers a second, and the clients' limits against K. */
export const chartOf = (scenario: Scenario, { stats, summaries }: Observed): Chart => {
  const startedAt = stats.startedAt ?? 0
  const window = windowOf(scenario, stats)
  const rate = (count: (bucket: Observed["stats"]["buckets"][number]) => number) =>
    stats.buckets.map((bucket, i): readonly [number, number] => [
      ((i + 0.5) * BUCKET_MILLIS) / 1000,
      count(bucket) * perSecond
    ])
  const limits = summaries.map((summary) =>
    (summary.limits ?? []).map(([at, limit]): readonly [number, number] => [(at - startedAt) / 1000, limit])
      .filter(([at]) => at >= 0)
  )
  const end = stats.buckets.length * BUCKET_MILLIS / 1000
  const series: Array<Series> = [
    {
      label: "answered 200 a second",
      color: "#2a7",
      axis: "left",
      points: rate((b) => b.requests - b.throttled - b.failed)
    },
    { label: "429 a second", color: "#d80", axis: "left", points: rate((b) => b.throttled) },
    { label: "5xx a second", color: "#c33", axis: "left", points: rate((b) => b.failed) },
    ...(limits.length > 1
      ? limits.map((points): Series => ({ label: "", color: "#99c", axis: "right", points, step: true, width: 1 }))
      : []),
    {
      label: limits.length > 1 ? "sum of the processes' limits" : "the client's concurrency limit",
      color: "#24c",
      axis: "right",
      points: sumOf(limits),
      step: true,
      width: 2.5
    },
    // A service with a line: how many requests were open at it (waiting or served) is the figure.
    ...(scenario.plan.queueExcess === true
      ? [{
        label: "requests open at the service (most in 100 ms)",
        color: "#a3a",
        axis: "right" as const,
        points: stats.buckets.map((bucket, i): readonly [number, number] => [
          (i * BUCKET_MILLIS) / 1000,
          bucket.peakInFlight
        ]),
        step: true,
        width: 1
      }]
      : []),
    { label: `capacity K = ${K}`, color: "#000", axis: "right", points: [[0, K], [end, K]], dashed: true }
  ]
  return {
    title: `${scenario.name}: ${scenario.persons} persons, ${scenario.processes} process${
      scenario.processes > 1 ? "es" : ""
    }, default settings`,
    xLabel: "seconds since the first request",
    leftLabel: "requests a second at the service (100 ms buckets)",
    rightLabel: "requests at once",
    series,
    windows: window === undefined
      ? []
      : [{ from: window.from / 1000, to: window.to / 1000, label: "the scenario's window" }]
  }
}

/** The sum of step series at each of their points' times (each value holds until its next point). */
export const sumOf = (
  series: ReadonlyArray<ReadonlyArray<readonly [number, number]>>
): ReadonlyArray<readonly [number, number]> => {
  const times = [...new Set(series.flatMap((points) => points.map(([at]) => at)))].sort((a, b) => a - b)
  const next = series.map(() => 0)
  const current = series.map(() => 0)
  return times.map((at) => {
    series.forEach((points, i) => {
      while (next[i]! < points.length && points[next[i]!]![0] <= at) current[i] = points[next[i]!++]![1]
    })
    return [at, current.reduce((sum, value) => sum + value, 0)] as const
  })
}

const main = async () => {
  const option = (name: string) => {
    const at = process.argv.indexOf(name)
    return at < 0 ? undefined : process.argv[at + 1]
  }
  const persons = Number(option("--persons") ?? FULL.persons)
  const only = (option("--only") ?? "2,3,7").split(",")
  const outDir = option("--out-dir") ?? Path.join(import.meta.dirname, "../../docs/images")
  Fs.mkdirSync(outDir, { recursive: true })
  for (const scenario of scenarios({ ...FULL, persons }).filter((s) => only.includes(s.name.split(" ")[0]!))) {
    const observed = await observe(scenario, { settings: {}, sampleLimit: true })
    const file = Path.join(outDir, `load-${scenario.name.split(" ")[0]}.svg`)
    Fs.writeFileSync(file, svgOf(chartOf(scenario, observed)))
    const failed = observed.summaries.reduce((sum, s) => sum + s.failed + s.skipped, 0)
    process.stdout.write(
      `${scenario.name}: ${failed} failed, wall ${(observed.wallMillis / 1000).toFixed(1)} s; wrote ${
        Path.relative(process.cwd(), file)
      }\n`
    )
  }
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === Path.join(import.meta.dirname, "plot.ts")) {
  await main()
}
