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
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { fileURLToPath } from "node:url"
import { createNew } from "../../core/files.js"
import { readSettingFile } from "../../core/settingFile.js"
import * as ClinicalConfig from "../ClinicalConfig.js"
import type { ClinicalError } from "../ClinicalError.js"
import { refusedOption } from "../internal/batch/batch.js"
import { dateRange } from "../internal/call/personRequest.js"
import * as PersonAuthentication from "../PersonAuthentication.js"
import * as PersonData from "../PersonData.js"
import * as TokenService from "../TokenService.js"
import { client, settingsFile } from "./environment.js"
import { metricsOptions, withTelemetry } from "./observed.js"
import { CliError, ExitCode, exitCodeOfError, usage } from "./outcome.js"
import * as Persons from "./persons.js"
import { optional, queueCommand } from "./queue.js"
import * as Render from "./render.js"
import { VERSION } from "./version.js"

/**
 * The parts of one command each (the batch's job, the probe, the mock server with its HTTP server),
 * loaded when that command runs: the others, and `--help`, start without them.
 */
const BatchJob = Effect.promise(() => import("./batchJob.js"))
const Probe = Effect.promise(() => import("./probe.js"))
const MockClinicalServer = Effect.promise(() => import("../testing/MockClinicalServer.js"))

/** The documented operations, by command name. */
export const OPERATIONS: ReadonlyArray<readonly [string, PersonData.Operation]> = [
  ["medications", PersonData.medications],
  ["ethnicities", PersonData.ethnicities],
  ["detailed-ethnicities", PersonData.detailedEthnicities],
  ["unique-device-identifiers", PersonData.uniqueDeviceIdentifiers]
]

/** What an operation's name looks like; anything else typed there is not repeated (it may be a secret typed in the wrong place). */
const NAME_LIKE = /^[A-Za-z][A-Za-z-]{0,39}$/

const operationNamed = (name: string): Effect.Effect<PersonData.Operation, CliError> => {
  const found = OPERATIONS.find(([command, op]) => command === name || op.name === name)
  if (found !== undefined) return Effect.succeed(found[1])
  const shown = NAME_LIKE.test(name) ? `"${name}"` : "(not shown: it does not look like an operation's name)"
  return Effect.fail(usage(`unknown operation ${shown}: one of ${OPERATIONS.map(([command]) => command).join(", ")}`))
}

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

const personsFile = Options.file("persons-file").pipe(
  Options.withDescription("read PersonUids from this file, one per line (blank lines and # comments skipped)"),
  Options.optional
)
const format = Options.choice("format", ["table", "json", "ndjson"]).pipe(
  Options.withDescription("table (default), json (one array), ndjson (one line per person, as they complete)"),
  Options.withDefault("table" as const)
)
const jsonFlag = Options.boolean("json").pipe(Options.withDescription("same as --format json"))
const ndjsonFlag = Options.boolean("ndjson").pipe(Options.withDescription("same as --format ndjson"))
const startDate = Options.text("start-date").pipe(
  Options.withDescription("first day to include, YYYY-MM-DD"),
  Options.optional
)
const endDate = Options.text("end-date").pipe(
  Options.withDescription("last day to include, YYYY-MM-DD"),
  Options.optional
)
/**
 * `--start-date` and `--end-date` (by the library's own rules) and the PersonUid arguments, checked
 * before the settings are read and anything is sent: a bad one is one usage error, not one failure
 * per person.
 */
const checkedArguments = (options: {
  readonly startDate: Option.Option<string>
  readonly endDate: Option.Option<string>
  /** The PersonUid arguments, checked too, when the command takes them. */
  readonly persons?: ReadonlyArray<string>
}): Effect.Effect<{ readonly startDate: string | undefined; readonly endDate: string | undefined }, CliError> => {
  const dates = { startDate: Option.getOrUndefined(options.startDate), endDate: Option.getOrUndefined(options.endDate) }
  const range = dateRange(dates)
  if (Either.isLeft(range)) {
    // The library names its options (startDate); here they are flags.
    const flag = (name: string) => (name === "startDate" ? "--start-date" : "--end-date")
    return Effect.fail(usage(`${flag(range.left[0])} ${range.left[1].replace(/\b(startDate|endDate)\b/g, flag)}`))
  }
  const refused = options.persons === undefined ? undefined : Persons.argumentsRefusal(options.persons)
  return refused === undefined ? Effect.succeed(dates) : Effect.fail(refused)
}

const personArgs = Args.text({ name: "personUid" }).pipe(
  Args.withDescription("PersonUids; - reads them from standard input"),
  Args.repeated
)

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
// batch

const batch = Command.make(
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

// ---------------------------------------------------------------------------------------------
// probe

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
// mock-server

/**
 * How to run this command line where it runs now, from the path of this module: installed (under
 * node_modules, `npx` finds it), or in the library's own checkout (its `cli` script).
 */
export const commandLineHere = (modulePath: string): string =>
  modulePath.split(/[\\/]/).includes("node_modules") ? "npx effect-clinical" : "npm run -s cli --"

/**
 * The mock's certificate and key from `--tls-cert` and `--tls-key` (PEM files; both or neither), or
 * the usage error naming the flag (never a file's text).
 */
const tlsOf = (
  cert: Option.Option<string>,
  key: Option.Option<string>
): Effect.Effect<{ readonly cert: string; readonly key: string } | undefined, CliError> => {
  if (Option.isNone(cert) && Option.isNone(key)) return Effect.succeed(undefined)
  if (Option.isNone(cert) || Option.isNone(key)) {
    return Effect.fail(usage("--tls-cert and --tls-key go together: the certificate and its key"))
  }
  const certFile = readSettingFile("--tls-cert", cert.value)
  if (!certFile.ok) return Effect.fail(usage(`--tls-cert ${certFile.reason}`))
  const keyFile = readSettingFile("--tls-key", key.value)
  if (!keyFile.ok) return Effect.fail(usage(`--tls-key ${keyFile.reason}`))
  return Effect.succeed({ cert: certFile.value.toString("utf8"), key: keyFile.value.toString("utf8") })
}

/** The persons mock-server lists; the rest go to `--persons-out`. */
const SHOWN_PERSONS = 3

/** The PersonUids, one a line, into a new owner-only file (never through a link planted there). */
const writePersonUids = (path: string, persons: ReadonlyArray<{ readonly personUid: string }>) =>
  Effect.tryPromise({
    try: async () => {
      const handle = await createNew(path)
      try {
        await handle.writeFile(persons.map((person) => person.personUid).join("\n") + "\n")
      } finally {
        await handle.close()
      }
    },
    catch: (cause) =>
      usage(
        `--persons-out cannot be created (${
          (cause as { readonly code?: unknown }).code ?? "error"
        }): it must be a new file`
      )
  })

const mockServer = Command.make("mock-server", {
  port: optional(Options.integer("port"), "port on 127.0.0.1 (default: PORT, else any free one)"),
  tlsCert: optional(
    Options.text("tls-cert"),
    "serve HTTPS with this certificate (PEM file, naming localhost), with --tls-key"
  ),
  tlsKey: optional(Options.text("tls-key"), "the certificate's private key (PEM file)"),
  persons: optional(
    Options.integer("persons"),
    "serve N made-up persons (the same N every time) instead of the 3 fixture persons"
  ),
  personsOut: optional(
    Options.text("persons-out"),
    "write the PersonUids it serves to this new file, one a line (owner-only): a persons file"
  )
}, ({ persons, personsOut, port, tlsCert, tlsKey }) =>
  Effect.gen(function*() {
    const chosen = Option.getOrElse(port, () => Number(process.env.PORT ?? "0"))
    if (!Number.isInteger(chosen) || chosen < 0 || chosen > 65535) {
      return yield* Effect.fail(usage(`the port must be an integer from 0 to 65535`))
    }
    const tls = yield* tlsOf(tlsCert, tlsKey)
    const { demoApplicationId, generatedPersons, make, serve } = yield* MockClinicalServer
    const made = yield* Option.match(persons, {
      onNone: () => Effect.succeed(undefined),
      onSome: (count) =>
        Effect.try({
          try: () => generatedPersons(count),
          catch: (cause) => usage(`--persons: ${(cause as Error).message}`)
        })
    })
    const mock = yield* make(made === undefined ? {} : { persons: made })
    if (Option.isSome(personsOut)) yield* writePersonUids(personsOut.value, mock.persons)
    const baseUrl = yield* serve(mock, { port: chosen, tls }).pipe(
      Effect.mapError(() =>
        new CliError({
          message: tls === undefined
            ? `cannot listen on 127.0.0.1:${chosen} (is the port in use?)`
            : `cannot serve HTTPS on 127.0.0.1:${chosen} (is the port in use, or are the certificate and key not a pair?)`,
          code: ExitCode.Failure
        })
      )
    )
    yield* Console.log(`Mock clinical service listening at ${baseUrl}`)
    yield* Console.log(`Demo ApplicationId (the mock's own, not a credential): ${demoApplicationId}`)
    yield* Console.log("Fixture persons (PersonUid, PassCode, date of birth):")
    for (const person of mock.persons.slice(0, SHOWN_PERSONS)) {
      yield* Console.log(`  ${person.displayName}: ${person.personUid}  ${person.passCode}  ${person.dateOfBirth}`)
    }
    if (mock.persons.length > SHOWN_PERSONS) {
      yield* Console.log(
        `  ... and ${mock.persons.length - SHOWN_PERSONS} more` +
          (Option.isSome(personsOut)
            ? ` (every PersonUid in ${Render.printable(personsOut.value)})`
            : " (--persons-out F lists them)")
      )
    }
    yield* Console.log(
      `\nTry, in another terminal: CLINICAL_BASE_URL=${baseUrl} \\\n` +
        `  CLINICAL_APPLICATION_ID=${demoApplicationId} \\\n` +
        // Over HTTPS the client trusts the CA that signed the certificate (the certificate itself, if self-signed).
        (tls === undefined ? "" : "  CLINICAL_CA_FILE=<the CA's PEM file> \\\n") +
        `  ${commandLineHere(fileURLToPath(import.meta.url))} medications ${mock.persons[0]!.personUid}`
    )
    return yield* Effect.never
  }).pipe(Effect.scoped)).pipe(
    Command.withDescription(
      "Serve the built-in mock service on loopback until stopped (Ctrl-C).\nExample: effect-clinical mock-server --port 8080"
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
