/**
 * What the person-data commands share: the documented operations by command name, and the options
 * that name persons and a date range, checked before anything is read or sent.
 */
import * as Args from "@effect/cli/Args"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { dateRange } from "../internal/call/personRequest.js"
import * as PersonData from "../PersonData.js"
import { CliError, usage } from "./outcome.js"
import * as Persons from "./persons.js"

/** The documented operations, by command name. */
export const OPERATIONS: ReadonlyArray<readonly [string, PersonData.Operation]> = [
  ["medications", PersonData.medications],
  ["ethnicities", PersonData.ethnicities],
  ["detailed-ethnicities", PersonData.detailedEthnicities],
  ["unique-device-identifiers", PersonData.uniqueDeviceIdentifiers]
]

/** What an operation's name looks like; anything else typed there is not repeated (it may be a secret typed in the wrong place). */
const NAME_LIKE = /^[A-Za-z][A-Za-z-]{0,39}$/

export const operationNamed = (name: string): Effect.Effect<PersonData.Operation, CliError> => {
  const found = OPERATIONS.find(([command, op]) => command === name || op.name === name)
  if (found !== undefined) return Effect.succeed(found[1])
  const shown = NAME_LIKE.test(name) ? `"${name}"` : "(not shown: it does not look like an operation's name)"
  return Effect.fail(usage(`unknown operation ${shown}: one of ${OPERATIONS.map(([command]) => command).join(", ")}`))
}

export const personsFile = Options.file("persons-file").pipe(
  Options.withDescription("read PersonUids from this file, one per line (blank lines and # comments skipped)"),
  Options.optional
)
export const format = Options.choice("format", ["table", "json", "ndjson"]).pipe(
  Options.withDescription("table (default), json (one array), ndjson (one line per person, as they complete)"),
  Options.withDefault("table" as const)
)
export const jsonFlag = Options.boolean("json").pipe(Options.withDescription("same as --format json"))
export const ndjsonFlag = Options.boolean("ndjson").pipe(Options.withDescription("same as --format ndjson"))
export const startDate = Options.text("start-date").pipe(
  Options.withDescription("first day to include, YYYY-MM-DD"),
  Options.optional
)
export const endDate = Options.text("end-date").pipe(
  Options.withDescription("last day to include, YYYY-MM-DD"),
  Options.optional
)
/**
 * `--start-date` and `--end-date` (by the library's own rules) and the PersonUid arguments, checked
 * before the settings are read and anything is sent: a bad one is one usage error, not one failure
 * per person.
 */
export const checkedArguments = (options: {
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

export const personArgs = Args.text({ name: "personUid" }).pipe(
  Args.withDescription("PersonUids; - reads them from standard input"),
  Args.repeated
)
