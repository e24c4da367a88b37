/**
 * The demo behind `npm start`.
 *
 * With CLINICAL_BASE_URL and CLINICAL_APPLICATION_ID set, it talks to that service and reads the
 * persons listed in CLINICAL_PERSON_UIDS (comma-separated). With no CLINICAL_* connection variable
 * set, it starts the mock server on loopback and reads every fixture person: no credentials, no
 * network. Setting some of them but not all three is a mistake it names, rather than quietly
 * falling back to the mock. It exits with 1 when nothing succeeded.
 */
import { Console, Data, Effect, Layer, Redacted } from "effect"
import { ClinicalClient, HttpTransport, MedicationService, TokenService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import { runMain } from "./support/runMain.js"

/** A mistake in how the demo was started, or a run where nothing succeeded. */
class DemoFailed extends Data.TaggedError("DemoFailed")<{ readonly message: string }> {}

/** The variables that say which service to talk to. */
const CONNECTION_VARIABLES = [
  "CLINICAL_BASE_URL",
  "CLINICAL_AUTH_URL",
  "CLINICAL_APPLICATION_ID",
  "CLINICAL_AUTHENTICATE_URL",
  "CLINICAL_TOKEN_PATH",
  "CLINICAL_AUTHENTICATE_PATH",
  "CLINICAL_PERSON_UIDS"
] as const
/** What a run against a real service needs: where, who, and whom to read. */
const REQUIRED = ["CLINICAL_BASE_URL", "CLINICAL_APPLICATION_ID", "CLINICAL_PERSON_UIDS"] as const

interface Target {
  readonly description: string
  readonly client: Layer.Layer<ClinicalClient.Services, unknown, HttpTransport.HttpTransport>
  readonly persons: ReadonlyArray<{ readonly label: string; readonly personUid: Redacted.Redacted<string> }>
}

/** The service named by the environment, if it names one; a half-named one is a mistake. */
const fromEnvironment = (env: NodeJS.ProcessEnv): Effect.Effect<Target | undefined, DemoFailed> => {
  const isSet = (name: string) => (env[name] ?? "").trim() !== ""
  const set = CONNECTION_VARIABLES.filter(isSet)
  if (set.length === 0) return Effect.succeed(undefined)
  const uids = (env.CLINICAL_PERSON_UIDS ?? "").split(",").map((uid) => uid.trim()).filter((uid) => uid.length > 0)
  const missing = REQUIRED.filter((name) => name === "CLINICAL_PERSON_UIDS" ? uids.length === 0 : !isSet(name))
  if (missing.length > 0) {
    return Effect.fail(
      new DemoFailed({
        message: `${set.join(", ")} ${set.length === 1 ? "is" : "are"} set, so the demo talks to that service, ` +
          `but ${missing.join(", ").replace(/, ([^,]*)$/, " and $1")} ${
            missing.length === 1 ? "is" : "are"
          } not (CLINICAL_PERSON_UIDS: ` +
          `PersonUids, comma-separated). Set ${
            missing.length === 1 ? "it" : "them"
          } too, or unset every CLINICAL_* variable to use the built-in mock.`
      })
    )
  }
  return Effect.succeed({
    description: `${env.CLINICAL_BASE_URL} (from CLINICAL_BASE_URL)`,
    client: ClinicalClient.layerConfig,
    // A PersonUid identifies a patient: it is never printed, only its position in the list.
    persons: uids.map((uid, i) => ({ label: `person ${i + 1} of CLINICAL_PERSON_UIDS`, personUid: Redacted.make(uid) }))
  })
}

/** The mock server on loopback, with its fixture persons. */
const fromMock = Effect.gen(function*() {
  const mock = yield* MockClinicalServer.make()
  const baseUrl = yield* MockClinicalServer.serve(mock)
  return {
    description:
      `the built-in mock server at ${baseUrl} (set CLINICAL_BASE_URL and CLINICAL_APPLICATION_ID to use a real one)`,
    client: ClinicalClient.layer({ baseUrl, applicationId: MockClinicalServer.demoApplicationId }),
    persons: mock.persons.map((person) => ({ label: person.displayName, personUid: Redacted.make(person.personUid) }))
  } satisfies Target
})

/** Counts the requests this client sends, by kind, around the real transport. */
const countingTransport = (counts: { token: number; data: number }) =>
  Layer.effect(
    HttpTransport.HttpTransport,
    Effect.map(HttpTransport.HttpTransport, (inner) => ({
      send: (request: HttpTransport.TransportRequest) => {
        if (/\/api\/server\/token$/i.test(request.url)) counts.token++
        else counts.data++
        return inner.send(request)
      }
    }))
  ).pipe(Layer.provide(HttpTransport.layerUndici()))

const text = (value: unknown): string => (value === undefined || value === null ? "" : String(value))

const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n")
}

const main = Effect.gen(function*() {
  const target = (yield* fromEnvironment(process.env)) ?? (yield* fromMock)
  const counts = { token: 0, data: 0 }
  yield* Console.log(`Connecting to ${target.description}`)

  const read = yield* Effect.gen(function*() {
    // Connected means a token was obtained: the host answered and accepted the ApplicationId.
    const token = yield* TokenService.get
    const minutes = Math.round((token.expiresAt - Date.now()) / 60_000)
    yield* Console.log(
      `Connected: token obtained; it expires at ${new Date(token.expiresAt).toISOString()} (in ${minutes} minutes)`
    )

    let read = 0
    for (const person of target.persons) {
      yield* MedicationService.get(person.personUid).pipe(
        Effect.flatMap(({ medications }) => {
          read++
          return Console.log(
            `\n${person.label}: ${medications.length} medication(s)\n` + table(
              ["Medication", "Strength", "Instructions", "Start date"],
              medications.map((m) => [text(m.Name), text(m.Strength), text(m.Instructions), text(m.StartDate)])
            )
          )
        }),
        // Every failure is a typed error whose message is safe to print.
        Effect.catchAll((error) => Console.log(`\n${person.label}: not read (${error._tag}: ${error.message})`))
      )
    }
    return read
  }).pipe(
    Effect.provide(target.client.pipe(Layer.provide(countingTransport(counts)))),
    Effect.ensuring(
      Effect.suspend(() =>
        Console.log(`\nRequests made: ${counts.token} token request(s), ${counts.data} data request(s)`)
      )
    )
  )
  if (target.persons.length > 0 && read === 0) {
    return yield* new DemoFailed({ message: `none of the ${target.persons.length} person(s) could be read` })
  }
})

runMain(Effect.scoped(main))
