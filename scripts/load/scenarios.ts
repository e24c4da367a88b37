/**
 * The load-control scenarios of docs/resilience.md, for real: a service of fixed capacity in a
 * process of its own (`capacityServer.ts`: K requests at once, 20 ms each, 429 beyond), client
 * processes running a batch through the default undici transport (`batchProcess.ts`), and the
 * figures each scenario is judged by.
 *
 *   npm run load:scenarios -- [--only 1,2,3,3b,4,5,6,6b,7,8] [--before] [--persons 3000] [--runs 1]
 *
 * `--before` turns the load control off (`adaptiveConcurrency: false`, no breaker, no budget): the
 * client as it was before it, for the figures side by side.
 */
import { spawn } from "node:child_process"
import * as Path from "node:path"
import * as Readline from "node:readline"
import type { BatchRequest, BatchSummary } from "./batchProcess.js"
import { BUCKET_MILLIS, type Plan, type Stats } from "./capacityPlan.js"

const here = import.meta.dirname

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

/** How large the scenarios are: the sizes (`FULL`), or smaller for a test. */
export interface Scale {
  readonly persons: number
  /** How long the service is down (503, or its port closed), from 2 s in. */
  readonly outageMillis: number
  /**
   * How long its answers take `slowLatencyMillis` instead of 20 ms, from 2 s in; and how long they
   * take to grow from 20 ms to `slowLatencyMillis` from the start (then stay there half as long).
   */
  readonly slowMillis: number
  readonly slowLatencyMillis: number
}

/** Scenario 8's service: answers taking 15 ms at first, 300 ms in the end (issue 50). */
export const RISING_FROM_MILLIS = 15
export const RISING_TO_MILLIS = 300

/**
 * How long scenario 8's latency takes to rise (then it stays at its end): the whole run, for `persons`
 * served at the capacity's pace. At K at once, a latency rising linearly from a to b over T serves
 * K T ln(b / a) / (b - a) requests.
 */
export const risingMillisFor = (persons: number): number =>
  Math.round(
    persons * (RISING_TO_MILLIS - RISING_FROM_MILLIS) / (K * Math.log(RISING_TO_MILLIS / RISING_FROM_MILLIS))
  )

export const FULL: Scale = { persons: 3000, outageMillis: 15_000, slowMillis: 20_000, slowLatencyMillis: 2000 }

/** The scenarios of issues 25 and 37 at `scale`. */
export const scenarios = (
  { outageMillis, persons, slowLatencyMillis, slowMillis }: Scale
): ReadonlyArray<Scenario> => {
  const risingMillis = risingMillisFor(persons)
  const outage = { from: 2000, to: 2000 + outageMillis }
  const slow = { from: 2000, to: 2000 + slowMillis }
  const fromStart = { from: 0, to: outageMillis }
  const degrading = { from: 0, to: slowMillis * 1.5 }
  const seconds = (millis: number) => `${millis / 1000} s`
  return [
    {
      name: "1 one process, 429 with Retry-After: 1",
      plan: { capacity: K, retryAfterSeconds: 1, phases: [] },
      persons,
      processes: 1
    },
    { name: "1 one process, 429 without Retry-After", plan: { capacity: K, phases: [] }, persons, processes: 1 },
    { name: "2 four processes", plan: { capacity: K, retryAfterSeconds: 1, phases: [] }, persons, processes: 4 },
    {
      name: `3 all 503 for ${seconds(outageMillis)}`,
      plan: { capacity: K, phasesAfterAnswers: 1, phases: [{ at: outage.from, status: 503 }, { at: outage.to }] },
      persons,
      processes: 1,
      window: outage
    },
    {
      name: `3b port closed for ${seconds(outageMillis)}`,
      plan: { capacity: K, phasesAfterAnswers: 1, phases: [{ at: outage.from, closed: true }, { at: outage.to }] },
      persons,
      processes: 1,
      window: outage
    },
    {
      name: `4 latency 20 ms -> ${seconds(slowLatencyMillis)} for ${seconds(slowMillis)}`,
      plan: {
        capacity: K,
        phases: [{ at: slow.from, latencyMillis: slowLatencyMillis }, { at: slow.to, latencyMillis: LATENCY }]
      },
      persons,
      processes: 1,
      window: slow
    },
    { name: "5 30% random 500s", plan: { capacity: K, phases: [{ at: 0, failingShare: 0.3 }] }, persons, processes: 1 },
    {
      name: `6 all 503 from the start for ${seconds(outageMillis)}`,
      plan: { capacity: K, phases: [{ at: 0, status: 503 }, { at: fromStart.to }] },
      persons,
      processes: 1,
      window: fromStart
    },
    {
      name: `6b port closed from the start for ${seconds(outageMillis)}`,
      plan: { capacity: K, phases: [{ at: 0, closed: true }, { at: fromStart.to }] },
      persons,
      processes: 1,
      window: fromStart
    },
    {
      name: `7 latency growing 20 ms -> ${seconds(slowLatencyMillis)} over ${seconds(slowMillis)}, then ${
        seconds(slowMillis / 2)
      } at it, excess requests waiting`,
      plan: {
        capacity: K,
        queueExcess: true,
        phases: [
          { at: 0, latencyMillis: LATENCY, latencyToMillis: slowLatencyMillis },
          { at: slowMillis, latencyMillis: slowLatencyMillis },
          { at: degrading.to, latencyMillis: LATENCY }
        ]
      },
      persons,
      processes: 1,
      window: degrading
    },
    {
      name: `8 latency rising ${RISING_FROM_MILLIS} ms -> ${RISING_TO_MILLIS} ms over ${
        seconds(risingMillis)
      }, excess requests waiting`,
      plan: {
        capacity: K,
        queueExcess: true,
        phases: [
          { at: 0, latencyMillis: RISING_FROM_MILLIS, latencyToMillis: RISING_TO_MILLIS },
          { at: risingMillis, latencyMillis: RISING_TO_MILLIS }
        ]
      },
      persons,
      processes: 1,
      window: { from: 0, to: risingMillis }
    }
  ]
}

/**
 * Starts a child process: its first JSON line of output, its second (when it prints one), and the
 * process. Other lines (a client's log lines) are passed over.
 */
const start = (script: string, argument: unknown) => {
  const child = spawn(process.execPath, ["--import", "tsx", Path.join(here, script), JSON.stringify(argument)], {
    stdio: ["ignore", "pipe", "inherit"]
  })
  const lines = Readline.createInterface({ input: child.stdout! })
  const nth = (n: number) => {
    const line = new Promise<string>((resolve, reject) => {
      let seen = 0
      lines.on("line", (text) => {
        if (text.startsWith("{") && ++seen === n) resolve(text)
      })
      child.once("exit", (code) => reject(new Error(`${script} exited with ${code} before printing line ${n}`)))
    })
    // A line nobody waits for (the server prints one) must not fail the run when the process ends.
    line.catch(() => undefined)
    return line
  }
  return { child, line: nth(1), second: nth(2) }
}

/** The scenario's window in the service's time (its buckets'): the phases' time may start later. */
export const windowOf = (scenario: Scenario, stats: Stats): Scenario["window"] => {
  if (scenario.window === undefined) return undefined
  const shift = (stats.phasesStartedAt ?? stats.startedAt ?? 0) - (stats.startedAt ?? 0)
  return { from: scenario.window.from + shift, to: scenario.window.to + shift }
}

const figuresOf = (
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

/** What one run of a scenario saw: the service's counts, and each client process's summary. */
export interface Observed {
  readonly stats: Stats
  readonly summaries: ReadonlyArray<BatchSummary>
  /** The batches' own time, without the processes' start-up. */
  readonly wallMillis: number
}

/** Runs one scenario and figures it out: the server, its client processes, the figures. */
export const run = async (
  scenario: Scenario,
  settings: Partial<BatchRequest["settings"]> = {},
  outagePatienceMillis?: number
): Promise<Figures> => {
  const { stats, summaries, wallMillis } = await observe(scenario, { settings, outagePatienceMillis })
  return figuresOf(scenario, stats, summaries, wallMillis)
}

/** Runs one scenario: the server, its client processes (each told `options`), what they saw. */
export const observe = async (
  scenario: Scenario,
  options: Pick<BatchRequest, "settings" | "outagePatienceMillis" | "sampleLimit">
): Promise<Observed> => {
  const server = start("capacityServer.ts", scenario.plan)
  try {
    const { controlPort, port } = JSON.parse(await server.line) as { port: number; controlPort: number }
    const baseUrl = `http://127.0.0.1:${port}`
    const share = Math.ceil(scenario.persons / scenario.processes)
    const clients = Array.from({ length: scenario.processes }, (_, i) =>
      start(
        "batchProcess.ts",
        {
          baseUrl,
          first: i * share,
          persons: Math.min(share, scenario.persons - i * share),
          ...options
        } satisfies BatchRequest
      ))
    // The service's time starts when every client is ready (a service down from the start sees no first request).
    await Promise.all(clients.map(({ line }) => line))
    await fetch(`http://127.0.0.1:${controlPort}/start`, { method: "POST" })
    const summaries = await Promise.all(clients.map(async ({ second }) => JSON.parse(await second) as BatchSummary))
    const wallMillis = Math.max(...summaries.map((summary) => summary.wallMillis))
    const stats = await (await fetch(`http://127.0.0.1:${controlPort}/`)).json() as Stats
    return { stats, summaries, wallMillis }
  } finally {
    server.child.kill("SIGTERM")
  }
}

/** The client's load control turned off: how it was before. */
export const BEFORE = { adaptiveConcurrency: false, circuitBreakerThreshold: 0, retryBudget: false } as const

const main = async () => {
  const option = (name: string) => {
    const at = process.argv.indexOf(name)
    return at < 0 ? undefined : process.argv[at + 1]
  }
  const persons = Number(option("--persons") ?? 3000)
  const only = option("--only")?.split(",")
  const before = process.argv.includes("--before")
  const runs = Number(option("--runs") ?? 1)
  const chosen = scenarios({ ...FULL, persons }).filter((s) =>
    only === undefined || only.includes(s.name.split(" ")[0]!)
  )
  process.stdout.write(
    `Load scenarios, ${persons} persons, K = ${K}, ${LATENCY} ms a request, ${
      before ? "load control off (before)" : "default settings"
    }\n`
  )
  for (const scenario of chosen) {
    for (let round = 0; round < runs; round++) {
      process.stdout.write(`${describe(await run(scenario, before ? BEFORE : {}))}\n`)
    }
  }
}

/** One run's figures as a line: the persons, the 429s, the time, and in a window what the service saw. */
export const describe = (f: Figures): string => {
  const percent = (x: number) => `${(x * 100).toFixed(1)}%`
  const rate = (x: number | undefined) => (x ?? 0).toFixed(1)
  const window = f.deadRatePerProcess === undefined ? "" : `
    in the window, per process: after its first 2 s ${rate(f.deadRatePerProcess)} req/s at most, ${
    rate(f.deadMeanRatePerProcess)
  } on average (first second ${rate(f.firstSecondPerProcess)}); connection attempts ${
    rate(f.connectRatePerProcess)
  }/s at most, ${rate(f.connectMeanRatePerProcess)} on average (first second ${
    rate(f.connectsFirstSecondPerProcess)
  }); peak in flight ${f.peakInFlightInWindow} at ${
    ((f.peakInFlightInWindowAt ?? 0) / 1000).toFixed(1)
  } s (K = ${K}); full speed ${f.recoveryMillis ?? "never"} ms after its end`
  return `${f.scenario}: ${f.failedPersons} failed ${JSON.stringify(f.failedByTag)}; 429s ${
    percent(f.throttledShare)
  } of ${f.requests}; ` +
    `wall ${(f.wallMillis / f.idealMillis).toFixed(2)}x ideal (${
      (f.wallMillis / 1000).toFixed(1)
    } s); peak in flight ${f.peakInFlight}; ` +
    `${f.requestsPerPerson.toFixed(2)} requests/person${window}`
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === Path.join(here, "scenarios.ts")) await main()
