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
 * (src/internal/call/concurrencyLimit.ts), or by a fixed cap when `limit` is off.
 *
 *   npm run load:model -- [--processes 1,4] [--k 8] [--persons 3000] [--ratio 0.7] [--increase 0.03]
 *     [--initial 4] [--max 64] [--at-once true]
 *
 * Every list option (comma-separated) is run in every combination, each 4 times (seeds 1-4), beside
 * today's fixed cap. `--at-once true` retries a 429 without Retry-After at once, behind the limit,
 * instead of after the backoff: rejected, as a fleet whose processes sit at the least limit then
 * retries in a storm (16 processes against K = 8: 94% of requests refused).
 */
import * as ConcurrencyLimit from "../../src/internal/call/concurrencyLimit.js"

export interface ModelOptions {
  readonly processes: number
  readonly persons: number
  readonly capacity: number
  readonly serviceMillis: number
  readonly retryAfterMillis: number | undefined
  /** Each process's ceiling (`maxConcurrentRequests`) and the batch's concurrency. */
  readonly max: number
  /** The limit's settings, or `undefined` for today's fixed cap of `max`. */
  readonly limit: { readonly initial: number; readonly backoffRatio: number; readonly increase: number } | undefined
  readonly maxRetries: number
  /** A 429 without Retry-After retried at once (behind the limit) instead of after the backoff. */
  readonly overloadRetriedAtOnce: boolean
  readonly seed: number
}

export interface ModelResult {
  readonly requests: number
  readonly tooMany: number
  readonly failedPersons: number
  readonly wallMillis: number
  readonly idealMillis: number
  /** The most requests out at once, summed over the processes. */
  readonly peakInFlight: number
  /** Each process's limit over time: [time, limit] at every change. */
  readonly limits: ReadonlyArray<ReadonlyArray<readonly [number, number]>>
}

/** A seeded pseudo-random source (mulberry32), so that runs repeat. */
const random = (seed: number) => () => {
  seed |= 0
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
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
  let serving = 0
  let requests = 0
  let tooMany = 0
  let failedPersons = 0
  let inFlightAll = 0
  let peakInFlight = 0
  let lastDone = 0
  const limits: Array<Array<readonly [number, number]>> = []

  /** The service: a request arriving now is served, or refused with a 429 at once. */
  const serve = (answer: (status: number) => void) => {
    requests++
    if (serving >= options.capacity) {
      tooMany++
      events.at(events.now + 0.1 + NETWORK_MILLIS, () => answer(429))
      return
    }
    serving++
    const millis = options.serviceMillis * (0.9 + 0.2 * draw())
    events.at(events.now + millis, () => {
      serving--
      events.at(events.now + NETWORK_MILLIS, () => answer(200))
    })
  }

  for (let p = 0; p < options.processes; p++) {
    const settings: ConcurrencyLimit.Settings = {
      min: 1,
      max: options.max,
      backoffRatio: options.limit?.backoffRatio ?? 1,
      increase: options.limit?.increase ?? 1
    }
    let state = options.limit === undefined
      ? { limit: options.max, good: options.max, decreasedAt: 0 }
      : ConcurrencyLimit.initial(settings, options.limit.initial)
    const history: Array<readonly [number, number]> = [[0, state.limit]]
    limits.push(history)
    let inFlight = 0
    const waiting: Array<() => void> = []
    const setLimit = (limit: number) => {
      if (limit !== state.limit) history.push([events.now, limit])
      state = { ...state, limit }
    }
    const release = () => {
      inFlight--
      inFlightAll--
      while (waiting.length > 0 && inFlight < ConcurrencyLimit.permits(state.limit)) {
        inFlight++
        inFlightAll++
        peakInFlight = Math.max(peakInFlight, inFlightAll)
        waiting.shift()!()
      }
    }
    /** Sends one request when the limit lets it out; `answered` gets its status. */
    const send = (answered: (status: number) => void) => {
      const go = () => {
        const sentAt = events.now
        events.at(events.now + NETWORK_MILLIS, () =>
          serve((status) => {
            if (options.limit !== undefined) {
              if (status === 429) {
                const next = ConcurrencyLimit.afterOverload(settings, state, sentAt, events.now)
                if (next !== state) {
                  history.push([events.now, next.limit])
                  state = next
                }
              } else {
                setLimit(ConcurrencyLimit.afterAnswer(settings, state, inFlight))
              }
            }
            release()
            answered(status)
          }))
      }
      if (waiting.length === 0 && inFlight < ConcurrencyLimit.permits(state.limit)) {
        inFlight++
        inFlightAll++
        peakInFlight = Math.max(peakInFlight, inFlightAll)
        go()
      } else waiting.push(go)
    }

    // The persons of this process, `max` calls at a time (getMany's default concurrency).
    let next = Math.floor((options.persons * p) / options.processes)
    const end = Math.floor((options.persons * (p + 1)) / options.processes)
    const person = () => {
      if (next >= end) return
      next++
      const attempt = (retried: number) =>
        send((status) => {
          if (status === 200) {
            lastDone = events.now
            return person()
          }
          if (retried >= options.maxRetries) {
            failedPersons++
            lastDone = events.now
            return person()
          }
          const exponential = Math.min(30_000, 1000 * 2 ** retried)
          const backoff = options.overloadRetriedAtOnce && options.retryAfterMillis === undefined
            ? 0
            : exponential / 2 + (draw() * exponential) / 2
          events.at(events.now + Math.max(backoff, options.retryAfterMillis ?? 0), () => attempt(retried + 1))
        })
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
    limits
  }
}

const main = () => {
  const args = process.argv.slice(2)
  const option = (name: string, fallback: string | number) => {
    const at = args.indexOf(`--${name}`)
    return at >= 0 ? args[at + 1]! : String(fallback)
  }
  const list = (name: string, fallback: string | number) => option(name, fallback).split(",").map(Number)
  const { backoffRatio, increase, initial } = ConcurrencyLimit.DEFAULTS
  const range = (values: ReadonlyArray<number>, digits = 0) =>
    `${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)}`
  const limits = [
    undefined,
    ...list("ratio", backoffRatio).flatMap((ratio) =>
      list("increase", increase).flatMap((step) =>
        list("initial", initial).map((start) => ({ initial: start, backoffRatio: ratio, increase: step }))
      )
    )
  ]
  for (const processes of list("processes", "1,4")) {
    for (const retryAfterMillis of [1000, undefined]) {
      for (const limit of limits) {
        const rows = [1, 2, 3, 4].map((seed) =>
          runModel({
            processes,
            persons: Number(option("persons", 3000)),
            capacity: Number(option("k", 8)),
            serviceMillis: 20,
            retryAfterMillis,
            max: Number(option("max", 64)),
            limit,
            maxRetries: 3,
            overloadRetriedAtOnce: option("at-once", "false") === "true",
            seed
          })
        )
        console.log(
          `${processes} process(es), Retry-After ${retryAfterMillis ?? "none"}, ` +
            (limit === undefined
              ? "fixed cap"
              : `limit (initial ${limit.initial}, ratio ${limit.backoffRatio}, increase ${limit.increase})`) +
            `: failed ${range(rows.map((r) => r.failedPersons))}, ` +
            `429s ${range(rows.map((r) => (100 * r.tooMany) / r.requests), 1)}%, ` +
            `wall ${range(rows.map((r) => r.wallMillis / r.idealMillis), 2)}x ideal, ` +
            `peak in flight ${range(rows.map((r) => r.peakInFlight))}`
        )
      }
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main()
