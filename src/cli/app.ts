/**
 * The `effect-clinical` command line: an Effect program over the library's own layers. Data goes
 * to stdout; messages, warnings and progress to stderr. No flag takes a secret.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Prompt from "@effect/cli/Prompt"
import * as Chunk from "effect/Chunk"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as ClinicalConfig from "../ClinicalConfig.js"
import type { ClinicalError } from "../ClinicalError.js"
import * as PersonAuthentication from "../PersonAuthentication.js"
import * as PersonData from "../PersonData.js"
import * as TokenService from "../TokenService.js"
import { batch } from "./batchCommand.js"
import { client, settingsFile } from "./environment.js"
import { mockServer } from "./mockServerCommand.js"
import { CliError, ExitCode, exitCodeOfError, usage } from "./outcome.js"
import {
  checkedArguments,
  endDate,
  format,
  jsonFlag,
  ndjsonFlag,
  operationNamed,
  OPERATIONS,
  personArgs,
  personsFile,
  startDate
} from "./personOptions.js"
import * as Persons from "./persons.js"
import { queueCommand } from "./queue.js"
import * as Render from "./render.js"
import { VERSION } from "./version.js"

/**
 * The parts of one command each (the probe here; the batch's job and the mock server in their
 * commands' modules), loaded when that command runs: the others, and `--help`, start without them.
 */
const Probe = Effect.promise(() => import("./probe.js"))

const stdinIsTerminal = (): boolean => process.stdin.isTTY === true

// ---------------------------------------------------------------------------------------------
// token

const reveal = Options.boolean("reveal").pipe(
  Options.withDescription("print the token itself too (it is a credential: keep it out of logs)")
)
const json = Options.boolean("json").pipe(Options.withDescription("print JSON instead of a table"))

const token = Command.make(
  "token",
  { settingsFile, reveal, json },
  ({ settingsFile, json, reveal }) =>
    Effect.gen(function*() {
      const config = yield* ClinicalConfig.ClinicalConfig
      const issued = yield* TokenService.get
      const host = new URL(config.authUrl).origin
      const skew = issued.serverClockSkewMillis
      if (json) {
        yield* Console.log(Render.json({
          host,
          generation: issued.generation,
          issuedAt: new Date(issued.issuedAt).toISOString(),
          expiresAt: new Date(issued.expiresAt).toISOString(),
          lifetimeSeconds: issued.lifetimeMillis / 1000,
          serverLifetimeSeconds: issued.serverLifetimeMillis / 1000,
          serverClockSkewMillis: skew ?? null,
          ...(reveal ? { token: Redacted.value(issued.token) } : {})
        }))
        return
      }
      yield* Console.log(Render.fields([
        ["host", host],
        ["lifetime", Render.duration(issued.lifetimeMillis)],
        ["expires", `${new Date(issued.expiresAt).toISOString()} (local clock)`],
        [
          "server clock",
          skew === undefined
            ? "unknown (no Date header)"
            : `${skew >= 0 ? "+" : ""}${Render.duration(skew)} (${skew >= 0 ? "ahead of" : "behind"} this machine)`
        ],
        ...(reveal ? [["token", Redacted.value(issued.token)] as const] : [])
      ]))
    }).pipe(Effect.provide(client(settingsFile)))
).pipe(
  Command.withDescription(
    "Obtain a token and print its host, lifetime, expiry and the server's clock skew; the token itself only with --reveal.\n" +
      "Example: effect-clinical token --settings-file clinical.env"
  )
)

// ---------------------------------------------------------------------------------------------
// authenticate

/** Pass code and date of birth: asked for at a terminal, else two lines of standard input. */
const credentials = Effect.suspend(() => {
  if (stdinIsTerminal()) {
    return Effect.all({
      passCode: Prompt.run(Prompt.password({ message: "Pass code" })),
      // Masked too: a date of birth identifies a patient as much as the pass code does.
      dateOfBirth: Prompt.run(Prompt.password({ message: "Date of birth (MM/DD/YYYY or YYYY-MM-DD)" }))
    }).pipe(Effect.mapError(() => new CliError({ message: "cancelled", code: ExitCode.Interrupted })))
  }
  // Two lines as typed: a pass code may start with "#" or hold spaces.
  return Stream.runCollect(Stream.take(Persons.linesOf("-"), 2)).pipe(
    Effect.flatMap((lines) => {
      const [passCode, dateOfBirth] = Chunk.toReadonlyArray(lines)
      return passCode === undefined || dateOfBirth === undefined
        ? Effect.fail(usage("standard input must hold two lines: the pass code, then the date of birth"))
        : Effect.succeed({ passCode: Redacted.make(passCode), dateOfBirth: Redacted.make(dateOfBirth) })
    })
  )
})

const authenticate = Command.make(
  "authenticate",
  { settingsFile, json },
  ({ settingsFile, json }) =>
    Effect.gen(function*() {
      const personUid = yield* PersonAuthentication.authenticate(yield* credentials)
      // The PersonUid is what the user asked for: printed as is, for them to store.
      yield* Console.log(json ? Render.json({ personUid: Redacted.value(personUid) }) : Redacted.value(personUid))
    }).pipe(Effect.provide(client(settingsFile)))
).pipe(
  Command.withDescription(
    "Exchange a person's pass code and date of birth for their PersonUid. Asks at a terminal; " +
      "otherwise reads two lines from standard input (pass code, date of birth).\n" +
      "Example: printf '%s\\n%s\\n' \"$PASS_CODE\" 01/31/1970 | effect-clinical authenticate"
  )
)

// ---------------------------------------------------------------------------------------------
// the person-data operations

type Entry = PersonData.Entry<PersonData.Result<PersonData.Item>>

const entryJson = ({ index, outcome }: Entry): Record<string, unknown> => {
  switch (outcome._tag) {
    case "Success":
      return { person: index + 1, items: outcome.result.items }
    case "Failure":
      return { person: index + 1, error: Render.errorJson(outcome.error) }
    case "Skipped":
      return { person: index + 1, skipped: outcome.stop.reason }
  }
}

const entryTable = ({ index, outcome }: Entry): string => {
  const title = `person ${Render.person(index)}`
  switch (outcome._tag) {
    case "Success":
      return outcome.result.items.length === 0
        ? `${title}: no items`
        : `${title}: ${Render.count(outcome.result.items.length, "item")}\n${Render.itemsTable(outcome.result.items)}`
    case "Failure":
      return `${title}: failed: ${Render.printable(outcome.error.message)}`
    case "Skipped":
      return `${title}: not sent (the batch stopped: ${Render.printable(outcome.stop.error.message)})`
  }
}

const dataCommand = (name: string, operation: PersonData.Operation) =>
  Command.make(
    name,
    { settingsFile, personsFile, format, json: jsonFlag, ndjson: ndjsonFlag, startDate, endDate, persons: personArgs },
    (options) =>
      Effect.flatMap(checkedArguments(options), (dates) =>
        Effect.gen(function*() {
          const chosen = options.json ? "json" : options.ndjson ? "ndjson" : options.format
          const entries = PersonData.getMany(
            operation,
            Persons.fromArguments(options.persons, Option.getOrUndefined(options.personsFile)),
            // What is printed must not hold what the server echoed of the request.
            { ...dates, redactEchoedSecrets: true }
          )
          let count = 0
          let failures = 0
          let firstError: ClinicalError | undefined
          const note = ({ outcome }: Entry) => {
            count++
            const error = outcome._tag === "Failure"
              ? outcome.error
              : outcome._tag === "Skipped"
              ? outcome.stop.error
              : undefined
            if (error !== undefined) {
              failures++
              firstError ??= error
            }
          }
          if (chosen === "ndjson") {
            yield* Stream.runForEach(entries, (entry) => {
              note(entry)
              return Console.log(Render.json(entryJson(entry)))
            })
          } else {
            // Printed in the input's order, once all are in.
            const all = [...Chunk.toReadonlyArray(yield* Stream.runCollect(entries))].sort((a, b) => a.index - b.index)
            all.forEach(note)
            // One person whose call failed: the error line says it, once (a table would say it again).
            const alone = chosen === "table" && all.length === 1 && all[0]!.outcome._tag !== "Success"
            if (all.length > 0 && !alone) {
              yield* Console.log(
                chosen === "json"
                  ? Render.json(all.map(entryJson), 2)
                  : all.map(entryTable).join("\n\n")
              )
            }
          }
          if (count === 0) {
            return yield* Effect.fail(usage("no PersonUid given: pass some, - for standard input, or --persons-file"))
          }
          if (firstError !== undefined) {
            // One person: their error. Several: how many failed (each one's error is in the output).
            return yield* Effect.fail(
              count === 1 ? firstError : new CliError({
                message: `${failures} of ${count} persons failed`,
                code: exitCodeOfError(firstError)
              })
            )
          }
        }).pipe(
          Effect.mapError((error) => error._tag === "InvalidRequest" ? usage(error.message) : error),
          Effect.provide(client(options.settingsFile))
        ))
  ).pipe(
    Command.withDescription(
      `A person's ${operation.name} (POST ${operation.path}), for each PersonUid given.\n` +
        `Example: effect-clinical ${name} --ndjson --persons-file persons.txt`
    )
  )

// ---------------------------------------------------------------------------------------------
// probe (batch and mock-server: batchCommand.ts, mockServerCommand.ts)

const probe = Command.make("probe", {
  settingsFile,
  json,
  person: Args.text({ name: "personUid" }).pipe(
    Args.withDescription(
      "a PersonUid the ApplicationId may read (- reads it from standard input); without it, fewer facts"
    ),
    Args.optional
  )
}, ({ settingsFile, json, person }) =>
  Effect.flatMap(Probe, ({ layer, render, run }) =>
    Effect.gen(function*() {
      const personUid = yield* Option.match(person, {
        onNone: () => Effect.succeed(undefined),
        onSome: (given) =>
          given === "-"
            ? Effect.flatMap(Stream.runHead(Persons.fromFile("-")), (read) =>
              Option.isSome(read)
                ? Effect.succeed(read.value)
                : Effect.fail(usage("probe -: standard input holds no PersonUid")))
            : Effect.succeed(given)
      })
      const report = yield* run(personUid === undefined ? undefined : Redacted.make(personUid))
      yield* Console.log(json ? Render.json(report, 2) : render(report))
    }).pipe(Effect.provide(layer(settingsFile))))).pipe(
    Command.withDescription(
      "Check a service against what is documented, read-only, in a bounded number of requests: the token's " +
        "expiry header and lifetime, the server's clock, whether a new token revokes the old one, how an unknown " +
        "person and a wrong method are answered, whether personuid binds like PersonUid, and the medication " +
        "response's field names (names only).\nExample: effect-clinical probe - < my-test-person.txt"
    )
  )

// ---------------------------------------------------------------------------------------------

const root = Command.make("effect-clinical").pipe(
  Command.withDescription(
    "Talk to the clinical data service from a terminal. Settings come from the CLINICAL_* environment " +
      "(or --settings-file); no flag takes a secret. Exit codes: 0 success, 1 failure, 2 usage error, " +
      "3 a batch finished with failures, 4 the credentials were refused, 130 interrupted."
  ),
  Command.withSubcommands([
    token,
    authenticate,
    ...OPERATIONS.map(([name, operation]) => dataCommand(name, operation)),
    batch,
    queueCommand({
      operations: OPERATIONS.map(([, operation]) => operation),
      operationNamed,
      dates: checkedArguments,
      dateOptions: { startDate, endDate }
    }),
    probe,
    mockServer
  ])
)

/** The command line, given `process.argv`. */
export const cli = Command.run(root, { name: "effect-clinical", version: VERSION })
