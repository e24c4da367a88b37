/**
 * A discrete-event model of a batch against a service of fixed capacity, to choose the load
 * control's settings before measuring them for real (the real scenarios run the client against a
 * test server in its own process; see docs/resilience.md). Time is simulated: a run of minutes
 * of service time takes milliseconds.
 *
 * The service serves K requests at once (each `serviceMillis`, ±10%); beyond K it answers 429 at
 * once, with or without Retry-After. Each client process runs its share of the persons `concurrency`
 * at a time, each person one call with the client's retry rules (backoff from 1 s with half jitter,
 * Retry-After honoured, 3 retries), its requests let out by the concurrency limit
 * (core/call/concurrencyLimit.ts), or by a fixed cap when `limit` is off.
 *
 *   npm run load:model -- [--processes 1,4] [--k 8] [--persons 3000] [--ratio 0.7] [--increase 0.03]
 *     [--initial 4] [--max 64] [--at-once true]
 *
 * Every list option (comma-separated) is run in every combination, each 4 times (seeds 1-4), beside
 * today's fixed cap. `--at-once true` retries a 429 without Retry-After at once, behind the limit,
 * instead of after the backoff: rejected, as a fleet whose processes sit at the least limit then
 * retries in a storm (16 processes against K = 8: 94% of requests refused).
 */
import type * as Clock from "effect/Clock"
import * as ConcurrencyLimit from "../../core/call/concurrencyLimit.js"
import type * as DeliveryCap from "../../core/call/deliveryCap.js"
import * as Queueing from "../../core/call/queueing.js"
import { seededRandom as random } from "../../core/testing/seeded.js"
import * as Gate from "../../src/internal/call/gate.js"
import { latencySample, LoadControl, Signal, signalOfStatus } from "../../src/internal/call/loadControl.js"

export interface ModelOptions {
  readonly processes: number
  readonly persons: number
  readonly capacity: number
  readonly serviceMillis: number
  readonly retryAfterMillis: number | undefined
  /** Each process's ceiling (`maxConcurrentRequests`) and the batch's concurrency. */
  readonly max: number
  /** The limit's settings, or `undefined` for today's fixed cap of `max`. */
  readonly limit: Partial<ConcurrencyLimit.Settings> & { readonly initial: number } | undefined
  readonly maxRetries: number
  /** A 429 without Retry-After retried at once (behind the limit) instead of after the backoff. */
  readonly overloadRetriedAtOnce: boolean
  readonly seed: number
  /** Requests beyond the capacity wait in line at the service instead of a 429. */
  readonly queueExcess?: boolean | undefined
  /** The service time of a request whose service begins at `millis` (else `serviceMillis` throughout). */
  readonly serviceMillisAt?: ((millis: number) => number) | undefined
  /** The latency signal's settings (with a limit); `undefined`: none. */
  readonly latency?: Queueing.Settings | undefined
  /** The delivery cap's settings (with a limit); `undefined`: none. */
  readonly delivery?: DeliveryCap.Settings | undefined
  /** A call's deadline (its waits for a turn included) and an attempt's timeout, in ms. */
  readonly deadlineMillis?: number | undefined
  readonly requestTimeoutMillis?: number | undefined
  /** The window in which `peakInFlightInWindow` is read, ms from the start. */
  readonly window?: { readonly from: number; readonly to: number } | undefined
  /**
   * A client process paused now and then (a busy CPU, a garbage collection): pauses begin every
   * `everyMillis` on average and last `meanMillis` on average (both drawn exponentially); an answer
   * that arrives during one is handled when it ends.
   */
  readonly pauses?: { readonly everyMillis: number; readonly meanMillis: number } | undefined
  /** A busy client: each answer is handled this long after it arrives on average (drawn exponentially). */
  readonly lagMillis?: number | undefined
}

export interface ModelResult {
  readonly requests: number
  readonly tooMany: number
  readonly failedPersons: number
  readonly wallMillis: number
  readonly idealMillis: number
  /** The most requests out at once, summed over the processes (those waiting at the service included). */
  readonly peakInFlight: number
  readonly peakInFlightInWindow: number
  /** Attempts that outlived their timeout. */
  readonly timedOut: number
  /** Each process's limit over time: [time, limit] at every change. */
  readonly limits: ReadonlyArray<ReadonlyArray<readonly [number, number]>>
}

/** A min-heap of timed events. */
class Events {
  private readonly heap: Array<{ at: number; order: number; run: () => void }> = []
  private order = 0
  now = 0
  at(at: number, run: () => void) {
    const heap = this.heap
    heap.push({ at, order: this.order++, run })
    let i = heap.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (before(heap[parent]!, heap[i]!)) break
      ;[heap[parent], heap[i]] = [heap[i]!, heap[parent]!]
      i = parent
    }
  }
  run() {
    const heap = this.heap
    while (heap.length > 0) {
      const top = heap[0]!
      const last = heap.pop()!
      if (heap.length > 0) {
        heap[0] = last
        let i = 0
        for (;;) {
          const l = 2 * i + 1
          const r = l + 1
          let least = i
          if (l < heap.length && before(heap[l]!, heap[least]!)) least = l
          if (r < heap.length && before(heap[r]!, heap[least]!)) least = r
          if (least === i) break
          ;[heap[least], heap[i]] = [heap[i]!, heap[least]!]
          i = least
        }
      }
      this.now = top.at
      top.run()
    }
  }
}
const before = (a: { at: number; order: number }, b: { at: number; order: number }) =>
  a.at < b.at || (a.at === b.at && a.order < b.order)

const NETWORK_MILLIS = 0.25

export const runModel = (options: ModelOptions): ModelResult => {
  const events = new Events()
  const draw = random(options.seed)
  const deadline = options.deadlineMillis ?? Number.POSITIVE_INFINITY
  const timeout = options.requestTimeoutMillis ?? Number.POSITIVE_INFINITY
  // The load control reads time from an Effect Clock: the model's, in ms.
  const clock = {
    unsafeCurrentTimeMillis: () => events.now,
    unsafeCurrentTimeNanos: () => BigInt(Math.round(events.now * 1_000_000))
  } as Clock.Clock
  let serving = 0
  const line: Array<{ readonly abandoned: () => boolean; readonly start: () => void }> = []
  let requests = 0
  let tooMany = 0
  let timedOut = 0
  let failedPersons = 0
  let atService = 0
  let peakInFlight = 0
  let peakInFlightInWindow = 0
  let lastDone = 0
  const limits: Array<Array<readonly [number, number]>> = []
  const window = options.window
  const counted = (change: number) => {
    atService += change
    peakInFlight = Math.max(peakInFlight, atService)
    if (window !== undefined && events.now >= window.from && events.now < window.to) {
      peakInFlightInWindow = Math.max(peakInFlightInWindow, atService)
    }
  }

  /** The service: a request arriving now is served, waits in line, or is refused with a 429 at once. */
  const serve = (answer: (status: number) => void, abandoned: () => boolean) => {
    requests++
    const start = () => {
      serving++
      const base = options.serviceMillisAt?.(events.now) ?? options.serviceMillis
      events.at(events.now + base * (0.9 + 0.2 * draw()), () => {
        serving--
        counted(-1)
        const next = line.shift()
        if (next !== undefined) next.start()
        events.at(events.now + NETWORK_MILLIS, () => answer(200))
      })
    }
    if (serving < options.capacity) {
      counted(1)
      return start()
    }
    if (options.queueExcess === true) {
      counted(1)
      return line.push({ abandoned, start })
    }
    tooMany++
    events.at(events.now + 0.1 + NETWORK_MILLIS, () => answer(429))
  }
  // A request given up by its client leaves the line (as the capacity server drops a closed one).
  const dropAbandoned = () => {
    for (let i = line.length - 1; i >= 0; i--) {
      if (line[i]!.abandoned()) {
        line.splice(i, 1)
        counted(-1)
      }
    }
  }

  for (let p = 0; p < options.processes; p++) {
    const history: Array<readonly [number, number]> = []
    limits.push(history)
    const gate = Gate.make(options.max)
    const limit = options.limit === undefined ? undefined : { ...ConcurrencyLimit.DEFAULTS, ...options.limit }
    const load = new LoadControl(
      {
        limit: limit === undefined ? undefined : { ...limit, max: options.max },
        latency: limit === undefined ? undefined : options.latency,
        delivery: limit === undefined ? undefined : options.delivery,
        initialLimit: limit?.initial ?? options.max,
        budget: undefined,
        breaker: undefined
      },
      gate,
      (permits) => history.push([events.now, permits])
    )

    // When this process next handles what arrives at `at` (its pauses drawn as time goes on).
    const pause = { from: Number.POSITIVE_INFINITY, to: Number.POSITIVE_INFINITY }
    const exponential = (mean: number) => -mean * Math.log(1 - draw())
    if (options.pauses !== undefined) {
      pause.from = exponential(options.pauses.everyMillis)
      pause.to = pause.from + exponential(options.pauses.meanMillis)
    }
    const handledAt = (arrived: number): number => {
      const at = options.lagMillis === undefined ? arrived : arrived + exponential(options.lagMillis)
      const pauses = options.pauses
      if (pauses === undefined) return at
      while (pause.to <= at) {
        pause.from = pause.to + exponential(pauses.everyMillis)
        pause.to = pause.from + exponential(pauses.meanMillis)
      }
      return at >= pause.from ? pause.to : at
    }

    /** Sends one request in a turn of the gate; `answered` gets its status (0: timed out), or `late` the call's deadline. */
    const send = (callStarted: number, answered: (status: number) => void, late: () => void) => {
      gate.take(() => {
        if (events.now > callStarted + deadline) {
          gate.leave()
          return late()
        }
        const number = load.sending(true, events.now)
        const sentMillis = events.now
        const inFlight = load.inFlight()
        let over = false
        const end = (status: number) => {
          if (over) return
          over = true
          load.ended(
            number,
            Number.NEGATIVE_INFINITY,
            status === 0 ? Signal.Overloaded : signalOfStatus(status),
            clock,
            status === 0 ? undefined : latencySample(status, sentMillis),
            inFlight
          )
          gate.leave()
          answered(status)
        }
        const wait = Math.min(timeout, callStarted + deadline - events.now)
        events.at(events.now + wait, () => {
          if (over) return
          timedOut++
          end(0)
          dropAbandoned()
        })
        const handled = (status: number) => events.at(handledAt(events.now), () => end(status))
        events.at(events.now + NETWORK_MILLIS, () => serve(handled, () => over))
      })
    }

    // The persons of this process, `max` calls at a time (getMany's default concurrency).
    let next = Math.floor((options.persons * p) / options.processes)
    const end = Math.floor((options.persons * (p + 1)) / options.processes)
    const person = () => {
      if (next >= end) return
      next++
      const callStarted = events.now
      const failed = () => {
        failedPersons++
        lastDone = events.now
        person()
      }
      const attempt = (retried: number) =>
        send(callStarted, (status) => {
          if (status === 200) {
            lastDone = events.now
            return person()
          }
          if (retried >= options.maxRetries || events.now > callStarted + deadline) return failed()
          const exponential = Math.min(30_000, 1000 * 2 ** retried)
          const backoff = options.overloadRetriedAtOnce && options.retryAfterMillis === undefined
            ? 0
            : exponential / 2 + (draw() * exponential) / 2
          events.at(events.now + Math.max(backoff, options.retryAfterMillis ?? 0), () => attempt(retried + 1))
        }, failed)
      attempt(0)
    }
    for (let i = 0; i < options.max; i++) person()
  }
  events.run()
  return {
    requests,
    tooMany,
    failedPersons,
    wallMillis: lastDone,
    idealMillis: (options.persons * options.serviceMillis) / options.capacity,
    peakInFlight,
    peakInFlightInWindow,
    timedOut,
    limits
  }
}

/** The slow degradation of issue 37: service time from 20 ms to `slowMillis` over `rampMillis`, held half as long, then 20 ms again. */
export const degrading = (rampMillis: number, slowMillis: number) => (at: number): number =>
  at < rampMillis ? 20 + ((slowMillis - 20) * at) / rampMillis : at < rampMillis * 1.5 ? slowMillis : 20

const main = () => {
  const args = process.argv.slice(2)
  const option = (name: string, fallback: string | number) => {
    const at = args.indexOf(`--${name}`)
    return at >= 0 ? args[at + 1]! : String(fallback)
  }
  const list = (name: string, fallback: string | number) => option(name, fallback).split(",").map(Number)
  const { backoffRatio, increase, initial, slowStart } = ConcurrencyLimit.DEFAULTS
  const range = (values: ReadonlyArray<number>, digits = 0) =>
    `${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)}`
  const limits = [
    undefined,
    ...list("ratio", backoffRatio).flatMap((ratio) =>
      list("increase", increase).flatMap((step) =>
        list("initial", initial).flatMap((start) =>
          list("slow-start", slowStart).map((growth) => ({
            initial: start,
            backoffRatio: ratio,
            increase: step,
            slowStart: growth
          }))
        )
      )
    )
  ]
  const latencies = [
    undefined,
    ...list("tolerance", Queueing.DEFAULTS.tolerance).flatMap((tolerance) =>
      list("min-round", Queueing.DEFAULTS.minRound).flatMap((minRound) =>
        list("check-every", Queueing.DEFAULTS.checkEvery).flatMap((checkEvery) =>
          list("refused-rounds", Queueing.DEFAULTS.refusedRounds).map((refusedRounds) => ({
            tolerance,
            minRound,
            checkEvery,
            refusedRounds,
            leastWaitMillis: Queueing.DEFAULTS.leastWaitMillis
          }))
        )
      )
    )
  ]
  const families = option("family", "overload,degrading").split(",")
  const describeLimit = (limit: (typeof limits)[number], latency: (typeof latencies)[number]) =>
    (limit === undefined
      ? "fixed cap"
      : `limit (initial ${limit.initial}, ratio ${limit.backoffRatio}, increase ${limit.increase}, slow start ${limit.slowStart})`) +
    (limit === undefined
      ? ""
      : latency === undefined
      ? ", no latency signal"
      : `, tolerance ${latency.tolerance}, round ${latency.minRound}, check every ${latency.checkEvery}, refused ${latency.refusedRounds}`)
  for (const family of families) {
    const degraded = family === "degrading"
    const rampMillis = Number(option("ramp", 20_000))
    for (const processes of list("processes", degraded ? "1" : "1,4")) {
      for (const retryAfterMillis of degraded ? [undefined] : [1000, undefined]) {
        for (const limit of limits) {
          for (const latency of limit === undefined ? [undefined] : latencies) {
            const rows = [1, 2, 3, 4].map((seed) =>
              runModel({
                processes,
                persons: Number(option("persons", 3000)),
                capacity: Number(option("k", 8)),
                serviceMillis: 20,
                retryAfterMillis,
                max: Number(option("max", 64)),
                limit,
                latency,
                maxRetries: 3,
                overloadRetriedAtOnce: option("at-once", "false") === "true",
                seed,
                lagMillis: option("lag", "") === "" ? undefined : Number(option("lag", "")),
                pauses: option("pauses", "") === ""
                  ? undefined
                  : { everyMillis: list("pauses", "")[0]!, meanMillis: list("pauses", "")[1]! },
                ...(degraded
                  ? {
                    queueExcess: true,
                    serviceMillisAt: degrading(rampMillis, Number(option("slow", 2000))),
                    deadlineMillis: 60_000,
                    requestTimeoutMillis: 30_000,
                    window: { from: 0, to: rampMillis * 1.5 }
                  }
                  : {})
              })
            )
            console.log(
              `${degraded ? "degrading, " : ""}${processes} process(es), Retry-After ${retryAfterMillis ?? "none"}, ` +
                describeLimit(limit, latency) +
                `: failed ${range(rows.map((r) => r.failedPersons))}, ` +
                `429s ${range(rows.map((r) => (100 * r.tooMany) / r.requests), 1)}%, ` +
                `wall ${range(rows.map((r) => r.wallMillis / r.idealMillis), 2)}x ideal, ` +
                `peak in flight ${range(rows.map((r) => r.peakInFlight))}` +
                (degraded
                  ? ` (in the window ${range(rows.map((r) => r.peakInFlightInWindow))}), timed out ${
                    range(rows.map((r) => r.timedOut))
                  }`
                  : "")
            )
          }
        }
      }
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main()
