/**
 * The client's spans and metrics, exported with OpenTelemetry through `@effect/opentelemetry`
 * (here to the console; swap the exporters for OTLP to send them to a collector). Logs go to the
 * application's own logger. Runs against the built-in mock: `npx tsx examples/observability.ts`.
 *
 * Install (pinned to the Effect 3 line):
 *   npm install @effect/opentelemetry@^0.64 @opentelemetry/api@^1.9 @opentelemetry/resources@~2.12 \
 *     @opentelemetry/sdk-trace-base@~2.12 @opentelemetry/sdk-trace-node@~2.12 @opentelemetry/sdk-metrics@~2.12
 */
// #region setup
import { NodeSdk } from "@effect/opentelemetry"
import { ConsoleMetricExporter, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { ConsoleSpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Console, Effect, Layer, Logger, LogLevel } from "effect"
import { ClinicalClient, MedicationService } from "effect-clinical"

// Spans to the console as each ends; metrics read every 60 s and once more at shutdown.
const Telemetry = NodeSdk.layer(() => ({
  resource: { serviceName: "clinical-backend" },
  spanProcessor: new SimpleSpanProcessor(new ConsoleSpanExporter()),
  metricReader: new PeriodicExportingMetricReader({
    exporter: new ConsoleMetricExporter(),
    exportIntervalMillis: 60_000
  })
}))

// The library's log lines, to the application's logger (here: one JSON line each on stderr).
// Debug shows refreshes and retries; the default, Info, shows only warnings.
const Logging = Layer.merge(
  Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ annotations, logLevel, message }) =>
      console.error(JSON.stringify({
        level: logLevel.label,
        message: Array.isArray(message) ? message.join(" ") : String(message),
        ...Object.fromEntries(annotations)
      }))
    )
  ),
  Logger.minimumLogLevel(LogLevel.Debug)
)
// #endregion

import { MockClinicalServer } from "effect-clinical/testing"
import { runMain } from "./support/runMain.js"

const program = Effect.gen(function*() {
  const mock = yield* MockClinicalServer.make()
  const baseUrl = yield* MockClinicalServer.serve(mock)
  // One failure first, so that a retry shows in the logs, the spans and the metrics.
  yield* mock.injectFaults("medications", [MockClinicalServer.Fault.status(503)])
  // #region use
  const { medications } = yield* MedicationService.get(mock.persons[0]!.personUid).pipe(
    Effect.provide(ClinicalClient.layerUndici({ baseUrl, applicationId: MockClinicalServer.demoApplicationId })),
    Effect.provide(Layer.merge(Telemetry, Logging))
  )
  // #endregion
  yield* Console.log(`read ${medications.length} medications`)
})

// NodeRuntime.runMain adds a pretty console logger of its own: leave the logging to ours.
runMain(Effect.scoped(program), { disablePrettyLogger: true })
