/**
 * The Effect 4 line's quick start (effect4/README.md and docs/effect4.md show it as pasted): a
 * person's medications since 2020, with settings from `CLINICAL_*` variables and the default undici
 * transport. Run by effect4/test/FreshProject.test.ts in a fresh project, as a user pastes it.
 */
// #region backend
import { NodeRuntime } from "@effect/platform-node"
import { Config, Console, Effect, Logger } from "effect"
import { ClinicalClient, MedicationService } from "effect-clinical"

const program = Effect.gen(function*() {
  // Redacted from the moment it is read: it identifies a patient.
  const personUid = yield* Config.Redacted("CLINICAL_PERSON_UID")
  const { medications } = yield* MedicationService.get(personUid, { startDate: "2020-01-01" })
  for (const medication of medications) {
    yield* Console.log(`${medication.Name} ${medication.Strength ?? ""}: ${medication.Instructions ?? ""}`)
  }
})

program.pipe(
  // Settings from CLINICAL_* variables; the default undici transport included.
  Effect.provide(ClinicalClient.layerUndiciConfig()),
  // Every failure is typed: here, its message on one line and exit code 1.
  Effect.tapError((error) => Console.error(`error: ${error}`)),
  // The library's log lines go to stderr: stdout is the program's output.
  Effect.provideService(Logger.LogToStderr, true),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
// #endregion
