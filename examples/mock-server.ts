/**
 * `npm run mock-server [-- --port N]`: serves the mock on loopback until stopped (Ctrl-C), for
 * testing other programs against it. The port comes from --port, else PORT, else any free one.
 */
import { Console, Effect } from "effect"
import { MockClinicalServer } from "effect-clinical/testing"
import { runMain } from "./support/runMain.js"

const portArgument = (argv: ReadonlyArray<string>): string | undefined => {
  const i = argv.findIndex((arg) => arg === "--port" || arg.startsWith("--port="))
  if (i < 0) return undefined
  return argv[i]!.includes("=") ? argv[i]!.split("=")[1] : argv[i + 1]
}

const main = Effect.gen(function*() {
  const raw = portArgument(process.argv.slice(2)) ?? process.env.PORT ?? "0"
  const port = Number(raw)
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    yield* Console.error(`The port must be an integer from 0 to 65535 (got "${raw}").`)
    process.exitCode = 2
    return
  }
  const mock = yield* MockClinicalServer.make()
  const baseUrl = yield* MockClinicalServer.serve(mock, { port })
  yield* Console.log(`Mock clinical service listening at ${baseUrl}`)
  yield* Console.log(`Demo ApplicationId: ${MockClinicalServer.demoApplicationId}`)
  yield* Console.log("Fixture persons (PersonUid, PassCode, date of birth):")
  for (const person of mock.persons) {
    yield* Console.log(`  ${person.displayName}: ${person.personUid}  ${person.passCode}  ${person.dateOfBirth}`)
  }
  yield* Console.log(
    `\nTry: CLINICAL_BASE_URL=${baseUrl} CLINICAL_APPLICATION_ID=${MockClinicalServer.demoApplicationId} \\
  CLINICAL_PERSON_UIDS=${mock.persons[0]!.personUid} npm start`
  )
  return yield* Effect.never
})

runMain(Effect.scoped(main))
