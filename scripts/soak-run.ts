/**
 * The fault soak: many medication calls at a fixed concurrency against the mock with seeded
 * faults, tokens revoked at intervals, and a report of what happened. Shared by `npm run soak`
 * (real sockets, undici, real clock) and by its smaller deterministic twin in the test suite
 * (in memory, TestClock).
 */
import { Cause, Clock, Effect, Exit, Layer, Metric, MetricState, Option } from "effect"
import { ClinicalClient, type ClinicalConfig, HttpTransport, MedicationService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"

export interface SoakOptions {
  readonly calls: number
  readonly concurrency: number
  /** Revoke every token on the server after this many completed calls. */
  readonly revokeEvery: number
  /** Seed of the fault draws. */
  readonly seed: number
  /** `http`: undici over loopback; `memory`: the in-memory transport. */
  readonly transport: "http" | "memory"
  /** Client settings on top of the defaults (the retry policy stays the default one). */
  readonly client?: Partial<ClinicalConfig.Options>
  /** How long a "slow" response takes; it must outlive the client's requestTimeout. */
  readonly slowResponse: string
}

/** The fault mix of the issue: 16% of data responses fail, by seeded chance. */
export const faultMix = (slowResponse: string) => [
  { probability: 0.05, fault: MockClinicalServer.Fault.status(500) },
  { probability: 0.05, fault: MockClinicalServer.Fault.status(503) },
  { probability: 0.03, fault: MockClinicalServer.Fault.drop },
  { probability: 0.02, fault: MockClinicalServer.Fault.delay(slowResponse as "1 second") },
  { probability: 0.01, fault: MockClinicalServer.Fault.status(429, { retryAfter: 1 }) }
]

export interface SoakReport {
  readonly calls: number
  readonly succeeded: number
  readonly failedByTag: Readonly<Record<string, number>>
  /** Calls that ended in a defect (a thrown exception) rather than a typed error. */
  readonly defects: number
  readonly attemptsMean: number
  readonly attemptsMax: number
  readonly tokenRequests: number
  readonly revocations: number
  readonly retriesByCause: Readonly<Record<string, number>>
  /** Every response the mock gave (token and data), by status. */
  readonly responsesByStatus: Readonly<Record<number, number>>
  readonly droppedConnections: number
  readonly wallMillis: number
}

const RUN_TAG = "soak_run"

/** Reads this run's metrics: retries by cause, attempts per call. */
const readMetrics = (runId: string) =>
  Effect.map(Metric.snapshot, (pairs) => {
    const retriesByCause: Record<string, number> = {}
    let attempts = { mean: 0, max: 0 }
    for (const pair of pairs) {
      const tags = Object.fromEntries(pair.metricKey.tags.map((tag) => [tag.key, tag.value]))
      if (tags[RUN_TAG] !== runId) continue
      const state = pair.metricState
      if (pair.metricKey.name === "clinical_retries_total" && MetricState.isCounterState(state)) {
        retriesByCause[tags.cause!] = (retriesByCause[tags.cause!] ?? 0) + Number(state.count)
      }
      if (pair.metricKey.name === "clinical_call_attempts" && MetricState.isHistogramState(state)) {
        attempts = { mean: state.sum / state.count, max: state.max }
      }
    }
    return { retriesByCause, attempts }
  })

/** Runs the soak and reports. Under TestClock, run it with the clock driven. */
export const runSoak = (options: SoakOptions): Effect.Effect<SoakReport, unknown, never> =>
  Effect.scoped(Effect.gen(function*() {
    const runId = `${options.transport}-${options.seed}-${Math.random().toString(36).slice(2)}`
    const mock = yield* MockClinicalServer.make()
    yield* mock.setRandomFaults("medications", { seed: options.seed, faults: faultMix(options.slowResponse) })
    const settings = { applicationId: MockClinicalServer.demoApplicationId, ...options.client }
    const client = options.transport === "http"
      ? ClinicalClient.layerUndici({ baseUrl: yield* MockClinicalServer.serve(mock), ...settings })
      : ClinicalClient.layer({ baseUrl: "https://mock.invalid", ...settings }).pipe(
        Layer.provide(Layer.succeed(HttpTransport.HttpTransport, MockClinicalServer.transport(mock)))
      )

    const persons = mock.persons
    let completed = 0
    let revocations = 0
    const startedAt = yield* Clock.currentTimeMillis
    const exits = yield* Effect.forEach(
      Array.from({ length: options.calls }, (_, i) => persons[i % persons.length]!.personUid),
      (personUid) =>
        MedicationService.get(personUid).pipe(
          Effect.exit,
          Effect.tap(() => {
            completed++
            if (completed % options.revokeEvery !== 0 || completed === options.calls) return Effect.void
            revocations++
            return mock.revokeAllTokens
          })
        ),
      { concurrency: options.concurrency }
    ).pipe(Effect.provide(client), Effect.tagMetrics(RUN_TAG, runId))
    const wallMillis = (yield* Clock.currentTimeMillis) - startedAt

    const failedByTag: Record<string, number> = {}
    let defects = 0
    for (const exit of exits) {
      if (Exit.isSuccess(exit)) continue
      const failure = Cause.failureOption(exit.cause)
      if (Option.isSome(failure)) failedByTag[failure.value._tag] = (failedByTag[failure.value._tag] ?? 0) + 1
      else defects++
    }
    const counters = yield* mock.counters
    const metrics = yield* readMetrics(runId)
    return {
      calls: options.calls,
      succeeded: exits.filter(Exit.isSuccess).length,
      failedByTag,
      defects,
      attemptsMean: metrics.attempts.mean,
      attemptsMax: metrics.attempts.max,
      tokenRequests: counters.tokenRequests,
      revocations,
      retriesByCause: metrics.retriesByCause,
      responsesByStatus: counters.byStatus,
      droppedConnections: counters.dropped,
      wallMillis
    }
  }))

/** The bounds the issue sets, as named checks. */
export const checks = (report: SoakReport): ReadonlyArray<readonly [string, boolean]> => [
  [
    `at least 99.8% of calls succeed (${(100 * report.succeeded / report.calls).toFixed(2)}%)`,
    report.succeeded >= 0.998 * report.calls
  ],
  [`every failure is a typed error (${report.defects} defects)`, report.defects === 0],
  [
    `token requests at most one per revocation plus one (${report.tokenRequests} for ${report.revocations} revocations)`,
    report.tokenRequests <= report.revocations + 1
  ]
]
