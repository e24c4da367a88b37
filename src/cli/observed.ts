/**
 * `--metrics-port` / `--metrics-host`, and a command run with the telemetry they and OpenTelemetry's
 * variables ask for (telemetryPlan.ts). The exporters (telemetry.ts, a chunk of their own) are
 * loaded only when something is exported.
 */
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type CliError, usage } from "./outcome.js"
import { exportsAnything, planOf } from "./telemetryPlan.js"
import { VERSION } from "./version.js"

/** The options of a command that exports metrics. */
export const metricsOptions = {
  metricsPort: Options.integer("metrics-port").pipe(
    Options.withDescription(
      "serve Prometheus metrics at http://127.0.0.1:PORT/metrics while it runs (0: any free port)"
    ),
    Options.optional
  ),
  metricsHost: Options.text("metrics-host").pipe(
    Options.withDescription("address to serve the metrics on (default 127.0.0.1; 0.0.0.0 for a scraper elsewhere)"),
    Options.optional
  )
}

/** What a command was given of {@link metricsOptions}. */
export interface MetricsAsked {
  readonly metricsPort: Option.Option<number>
  readonly metricsHost: Option.Option<string>
}

/**
 * Where a command says how to bring its gauges up to date (the queue's depth: read from Redis)
 * before the metrics are read; nothing is refreshed until it does.
 */
export interface Gauges {
  readonly refreshWith: (refresh: () => Promise<void>) => void
  /** Whether a scrape endpoint is up (a command that would end at once may stay to be scraped). */
  readonly scraped: boolean
}

/** `command` (given its {@link Gauges}) with the telemetry asked for, exported while it runs and once more at its end. */
export const withTelemetry = <A, E, R>(
  asked: MetricsAsked,
  command: (gauges: Gauges) => Effect.Effect<A, E, R>
): Effect.Effect<A, E | CliError, R> =>
  Effect.suspend(() => {
    const plan = planOf(
      { metricsPort: Option.getOrUndefined(asked.metricsPort), metricsHost: Option.getOrUndefined(asked.metricsHost) },
      process.env
    )
    if (typeof plan === "string") return Effect.fail(usage(plan))
    let refresh: (() => Promise<void>) | undefined
    const gauges: Gauges = { refreshWith: (given) => (refresh = given), scraped: plan.prometheus !== undefined }
    if (!exportsAnything(plan)) return command(gauges)
    return Effect.flatMap(
      Effect.promise(() => import("./telemetry.js")),
      (telemetry) =>
        Effect.provide(
          command(gauges),
          telemetry.layer(plan, VERSION, process.env, () => refresh?.() ?? Promise.resolve())
        )
    )
  })
