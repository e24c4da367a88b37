/**
 * One client process of a load scenario: reads `persons` PersonUids (`first` to `first + persons - 1`)
 * through `MedicationService.getMany` over the default undici transport, with the client's default
 * settings unless `settings` says otherwise. It prints `{"ready":true}` once its client is built,
 * just before the batch begins, then what became of the persons as one JSON line.
 *
 *   node --import tsx scripts/load/batchProcess.ts '{"baseUrl": ..., "first": 0, "persons": 750, "settings": {}}'
 */
import { Effect, Metric, Schedule, Stream } from "effect"
import * as DiagnosticsChannel from "node:diagnostics_channel"
import { ClinicalClient, type ClinicalConfig, MedicationService } from "../../src/index.js"
import * as Telemetry from "../../src/internal/observability/telemetry.js"

export interface BatchRequest {
  readonly baseUrl: string
  readonly first: number
  readonly persons: number
  readonly settings?: Partial<ClinicalConfig.Options>
  /** Milliseconds a person waits for a service that looks down (the library's default when absent). */
  readonly outagePatienceMillis?: number | undefined
  /** Whether to read the client's concurrency limit every {@link SAMPLE_MILLIS} (for a plot). */
  readonly sampleLimit?: boolean | undefined
}

/** How often the concurrency limit is read when `sampleLimit` asks for it. */
export const SAMPLE_MILLIS = 50

export interface BatchSummary {
  readonly succeeded: number
  readonly failed: number
  readonly skipped: number
  readonly failedByTag: Readonly<Record<string, number>>
  readonly wallMillis: number
  /** The concurrency limit as sampled: `[epoch ms, limit]`, when `sampleLimit` asked for it. */
  readonly limits?: ReadonlyArray<readonly [number, number]> | undefined
  /** When undici began each connection (epoch ms): what reaches a service whose port is closed. */
  readonly connects: ReadonlyArray<number>
}

const request = JSON.parse(process.argv[2] ?? "{}") as BatchRequest
const applicationId = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"

/** The client's concurrency limit (its gauge: one client in this process), read every SAMPLE_MILLIS. */
const sampled = (limits: Array<readonly [number, number]>) =>
  Metric.value(Telemetry.concurrencyLimit).pipe(
    Effect.tap(({ value }) => Effect.sync(() => limits.push([Date.now(), value]))),
    Effect.repeat(Schedule.spaced(SAMPLE_MILLIS)),
    Effect.fork
  )

// Every connection undici begins, whether or not it is made: a closed port counts nothing itself.
const connects: Array<number> = []
DiagnosticsChannel.subscribe("undici:client:beforeConnect", () => connects.push(Date.now()))

const program = Effect.gen(function*() {
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`)
  const limits: Array<readonly [number, number]> = []
  if (request.sampleLimit === true) yield* sampled(limits)
  const started = Date.now()
  const summary = { succeeded: 0, failed: 0, skipped: 0, failedByTag: {} as Record<string, number> }
  const persons = Array.from({ length: request.persons }, (_, i) => `scenario-person-${request.first + i}`)
  yield* MedicationService.getMany(persons, { outagePatience: request.outagePatienceMillis }).pipe(
    Stream.runForEach(({ outcome }) =>
      Effect.sync(() => {
        if (outcome._tag === "Success") summary.succeeded++
        else if (outcome._tag === "Skipped") summary.skipped++
        else {
          summary.failed++
          const error = outcome.error
          // A transport failure's reason says which (a refused connection, a timeout, a deadline).
          const kind = error._tag === "TransportError" ? `${error._tag} (${error.reason})` : error._tag
          summary.failedByTag[kind] = (summary.failedByTag[kind] ?? 0) + 1
        }
      })
    )
  )
  return {
    ...summary,
    wallMillis: Date.now() - started,
    connects,
    ...(request.sampleLimit === true ? { limits } : {})
  } satisfies BatchSummary
})

Effect.runPromise(
  program.pipe(
    Effect.provide(ClinicalClient.layerUndici({ baseUrl: request.baseUrl, applicationId, ...request.settings }))
  )
).then(
  (summary) => process.stdout.write(`${JSON.stringify(summary)}\n`),
  (error) => {
    process.stderr.write(`${String(error)}\n`)
    process.exit(1)
  }
)
