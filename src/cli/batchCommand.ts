/** `effect-clinical batch`: its options checked; the job (batchJob.ts) loaded when it runs. */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { refusedOption } from "../internal/batch/batch.js"
import { client, settingsFile } from "./environment.js"
import { metricsOptions, withTelemetry } from "./observed.js"
import { usage } from "./outcome.js"
import { checkedArguments, endDate, operationNamed, OPERATIONS, startDate } from "./personOptions.js"

const BatchJob = Effect.promise(() => import("./batchJob.js"))

export const batch = Command.make(
  "batch",
  {
    settingsFile,
    operation: Args.text({ name: "operation" }).pipe(
      Args.withDescription(`one of ${OPERATIONS.map(([command]) => command).join(", ")}`)
    ),
    personsFile: Options.file("persons-file").pipe(
      Options.withDescription("the PersonUids, one per line")
    ),
    out: Options.file("out").pipe(Options.withDescription("results, one JSON line per person (created owner-only)")),
    resume: Options.boolean("resume").pipe(
      Options.withDescription("continue an interrupted batch: skip the persons already in --out")
    ),
    concurrency: Options.integer("concurrency").pipe(
      Options.withDescription("calls in flight (default: CLINICAL_MAX_CONCURRENT_REQUESTS, 64)"),
      Options.optional
    ),
    progressEvery: Options.float("progress-every").pipe(
      Options.withDescription("seconds between progress reports (default: 0.2 at a terminal, else 10)"),
      Options.optional
    ),
    outagePatience: Options.float("outage-patience").pipe(
      Options.withDescription(
        "seconds the batch waits for a service that looks down before it stops (default 300; 0: no wait)"
      ),
      Options.optional
    ),
    startDate,
    endDate,
    ...metricsOptions
  },
  (options) =>
    Effect.flatMap(
      checkedArguments(options),
      ({ endDate, startDate }) =>
        withTelemetry(options, () =>
          Effect.gen(function*() {
            const operation = yield* operationNamed(options.operation)
            const interactive = process.stderr.isTTY === true
            const every = Option.getOrElse(options.progressEvery, () => (interactive ? 0.2 : 10))
            if (!(every >= 0.05 && every <= 86_400)) {
              return yield* Effect.fail(usage("--progress-every must be from 0.05 to 86400 seconds"))
            }
            // Checked by the library's own rules before any file is created: a refused option leaves
            // nothing behind.
            const concurrency = Option.getOrUndefined(options.concurrency)
            const patience = Option.getOrUndefined(options.outagePatience)
            if (patience !== undefined && !(patience >= 0 && patience <= 604_800)) {
              return yield* Effect.fail(usage("--outage-patience must be from 0 to 604800 seconds"))
            }
            const outagePatience = patience === undefined ? undefined : Duration.millis(patience * 1000)
            const refused = refusedOption({ concurrency, outagePatience })
            if (refused !== undefined) return yield* Effect.fail(usage(`--${refused[0]} ${refused[1]}`))
            yield* (yield* BatchJob).run({
              operation,
              personsFile: options.personsFile,
              out: options.out,
              resume: options.resume,
              concurrency,
              startDate,
              endDate,
              interactive,
              progressEvery: Duration.millis(every * 1000),
              outagePatience
            })
          }).pipe(Effect.provide(client(options.settingsFile))))
    )
).pipe(
  Command.withDescription(
    "Run one operation for every person of a file: results to --out (NDJSON, by input position, no PersonUid), " +
      "progress on stderr, resumable with --resume after Ctrl-C.\n" +
      "Example: effect-clinical batch medications --persons-file persons.txt --out results.ndjson"
  )
)
