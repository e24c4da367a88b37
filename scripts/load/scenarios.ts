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
import type { Stats } from "./capacityPlan.js"
import { type Figures, figuresOf, K, LATENCY, type Scenario } from "./figures.js"

export { type Figures, K, LATENCY, type Scenario, windowOf } from "./figures.js"

const here = import.meta.dirname

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
