/**
 * The README's quick-start program: one layer, one call.
 *
 *   CLINICAL_BASE_URL=https://openapitest.intelichart.com \
 *   CLINICAL_AUTH_URL=https://openapiauthtest.intelichart.com \
 *   CLINICAL_APPLICATION_ID=<your GUID> CLINICAL_PERSON_UID=<a PersonUid> npx tsx examples/quick-start.ts
 *
 * To try it without credentials, start `npm run mock-server` and use the values it prints.
 */
// #region backend
import { NodeRuntime } from "@effect/platform-node"
import { Config, Console, Effect, Logger, Redacted } from "effect"
import { ClinicalClient, MedicationService } from "effect-clinical"

const program = Effect.gen(function*() {
  // Read as a string, then redacted: a missing variable then says it is missing.
  const personUid = yield* Config.string("CLINICAL_PERSON_UID").pipe(Config.map(Redacted.make))
  const { medications } = yield* MedicationService.get(personUid, { startDate: "2020-01-01" })
  for (const medication of medications) {
    yield* Console.log(`${medication.Name} ${medication.Strength ?? ""}: ${medication.Instructions ?? ""}`)
  }
})

program.pipe(
  // Settings from CLINICAL_* variables; the default undici transport included.
  Effect.provide(ClinicalClient.layerUndiciConfig()),
  // Every failure is typed (a backend answers each _tag its own way: Effect.catchTag("ApiError", ...)).
  // Here: its message on one line, and exit code 1 (Effect's own report is the whole cause, with its stack).
  Effect.tapError((error) => Console.error(`error: ${error}`)),
  // The library's log lines (a refresh that failed, a retry) go to stderr: stdout is the program's output.
  Effect.provide(Logger.replace(Logger.defaultLogger, Logger.prettyLogger({ stderr: true }))),
  NodeRuntime.runMain({ disableErrorReporting: true, disablePrettyLogger: true })
)
// #endregion
