/**
 * What a run of a load scenario is judged by (`Figures`), read from the service's counts and the
 * client processes' summaries: the persons, the 429s, the time, and in the scenario's window what
 * the service saw and how soon the batch was back at its pace.
 */
import type { BatchSummary } from "./batchProcess.js"
import { BUCKET_MILLIS, type Plan, type Stats } from "./capacityPlan.js"

/** A scenario: the service's plan, the persons, how many client processes share them. */
export interface Scenario {
  readonly name: string
  readonly plan: Plan
  readonly persons: number
  readonly processes: number
  /** The outage or slowdown, in ms of the plan's phases: the window its figures are read in. */
  readonly window?: { readonly from: number; readonly to: number }
}

export interface Figures {
  readonly scenario: string
  readonly failedPersons: number
  readonly failedByTag: Readonly<Record<string, number>>
  readonly requests: number
  readonly throttledShare: number
  readonly wallMillis: number
  readonly idealMillis: number
  readonly peakInFlight: number
  readonly requestsPerPerson: number
  /** Data and token requests a second per process reaching the service in the window, after its first 2 s (the most in any second). */
  readonly deadRatePerProcess: number | undefined
  /** The same on average over the window after its first 2 s. */
  readonly deadMeanRatePerProcess: number | undefined
  /** Data and token requests per process in the window's first second. */
  readonly firstSecondPerProcess: number | undefined
  /** Connections the clients began a second per process, likewise: what reaches a port that refuses them. */
  readonly connectRatePerProcess: number | undefined
  /** The same on average over the window after its first 2 s. */
  readonly connectMeanRatePerProcess: number | undefined
  /** Connections the clients began per process in the window's first second. */
  readonly connectsFirstSecondPerProcess: number | undefined
  /** The most data requests in flight at the service during the window. */
  readonly peakInFlightInWindow: number | undefined
  /** When that was, ms from the start. */
  readonly peakInFlightInWindowAt: number | undefined
  /** From the window's end to the first 100 ms in which the service answered at least half its capacity's rate. */
  readonly recoveryMillis: number | undefined
  /**
   * The same against half the rate this run reached before the window (the median 100 ms from the
   * first answer to the window's start): what "back to full speed" means on a machine too busy to
   * reach the capacity's rate at all. Undefined when the window starts before any answer.
   */
  readonly recoveryToOwnPaceMillis: number | undefined
}

export const LATENCY = 20
export const K = 8

/** The scenario's window in the service's time (its buckets'): the phases' time may start later. */
export const windowOf = (scenario: Scenario, stats: Stats): Scenario["window"] => {
  if (scenario.window === undefined) return undefined
  const shift = (stats.phasesStartedAt ?? stats.startedAt ?? 0) - (stats.startedAt ?? 0)
  return { from: scenario.window.from + shift, to: scenario.window.to + shift }
}

export const figuresOf = (
  scenario: Scenario,
  stats: Stats,
  summaries: ReadonlyArray<BatchSummary>,
  wallMillis: number
): Figures => {
  const failedByTag: Record<string, number> = {}
  for (const summary of summaries) {
    for (const [tag, count] of Object.entries(summary.failedByTag)) failedByTag[tag] = (failedByTag[tag] ?? 0) + count
  }
  const requests = stats.answered + stats.throttled + stats.failed
  const window = windowOf(scenario, stats)
  const bucketsIn = (from: number, to: number) =>
    stats.buckets.slice(Math.floor(from / BUCKET_MILLIS), Math.ceil(to / BUCKET_MILLIS))
  let deadRate: number | undefined
  let deadMeanRate: number | undefined
  let firstSecond: number | undefined
  let connectRate: number | undefined
  let connectMeanRate: number | undefined
  let connectsFirstSecond: number | undefined
  let peakInWindow: number | undefined
  let peakInWindowAt: number | undefined
  let recovery: number | undefined
  let recoveryToOwnPace: number | undefined
  if (window !== undefined) {
    const perSecond = 1000 / BUCKET_MILLIS
    const late = bucketsIn(window.from + 2000, window.to)
    const sent = (buckets: ReadonlyArray<Stats["buckets"][number]>) =>
      buckets.reduce((sum, b) => sum + b.requests + b.tokenRequests, 0)
    const lateSeconds = (window.to - window.from - 2000) / 1000
    deadMeanRate = sent(late) / lateSeconds / scenario.processes
    firstSecond = sent(bucketsIn(window.from, window.from + 1000)) / scenario.processes
    deadRate = 0
    for (let i = 0; i + perSecond <= late.length; i++) {
      const second = sent(late.slice(i, i + perSecond))
      deadRate = Math.max(deadRate, second / scenario.processes)
    }
    const allConnects = summaries.flatMap((summary) => summary.connects.map((at) => at - (stats.startedAt ?? 0)))
    const connects = allConnects.filter((at) => at >= window.from + 2000 && at < window.to)
    connectMeanRate = connects.length / lateSeconds / scenario.processes
    connectsFirstSecond = allConnects.filter((at) => at < window.from + 1000 && at >= window.from).length /
      scenario.processes
    connectRate = 0
    for (const from of connects) {
      const inSecond = connects.filter((at) => at >= from && at < from + 1000).length
      connectRate = Math.max(connectRate, inSecond / scenario.processes)
    }
    const inWindow = bucketsIn(window.from, window.to).map((b) => b.peakInFlight)
    peakInWindow = Math.max(0, ...inWindow)
    peakInWindowAt = window.from + inWindow.indexOf(peakInWindow) * BUCKET_MILLIS
    // Half the capacity's rate in a bucket: K / latency requests a ms, for 100 ms.
    const half = (K / LATENCY) * BUCKET_MILLIS / 2
    const after = stats.buckets.slice(Math.floor(window.to / BUCKET_MILLIS))
    const answered = (b: Stats["buckets"][number]) => b.requests - b.throttled - b.failed
    const backAt = (rate: number) => {
      const first = after.findIndex((b) => answered(b) >= rate)
      return first < 0 ? undefined : first * BUCKET_MILLIS
    }
    recovery = backAt(half)
    const before = stats.buckets.slice(0, Math.floor(window.from / BUCKET_MILLIS)).map(answered)
    const paced = before.slice(before.findIndex((n) => n > 0)).sort((a, b) => a - b)
    const ownPace = before.some((n) => n > 0) ? paced[Math.floor(paced.length / 2)]! : undefined
    recoveryToOwnPace = ownPace === undefined ? undefined : backAt(ownPace / 2)
  }
  return {
    scenario: scenario.name,
    failedPersons: summaries.reduce((sum, s) => sum + s.failed + s.skipped, 0),
    failedByTag,
    requests,
    throttledShare: requests === 0 ? 0 : stats.throttled / requests,
    wallMillis,
    idealMillis: (scenario.persons * LATENCY) / K,
    peakInFlight: stats.peakInFlight,
    requestsPerPerson: requests / scenario.persons,
    deadRatePerProcess: deadRate,
    deadMeanRatePerProcess: deadMeanRate,
    firstSecondPerProcess: firstSecond,
    connectRatePerProcess: connectRate,
    connectMeanRatePerProcess: connectMeanRate,
    connectsFirstSecondPerProcess: connectsFirstSecond,
    peakInFlightInWindow: peakInWindow,
    peakInFlightInWindowAt: peakInWindowAt,
    recoveryMillis: recovery,
    recoveryToOwnPaceMillis: recoveryToOwnPace
  }
}
