/**
 * What the Cli*.test.ts and CliHostile*.test.ts files share: the mock and the folder each file sets
 * up (`setUpCli`, whose `mock` and `dir` are set for that file's tests), the fixture persons, the
 * settings for a mock, a file or a workspace made in the folder, and the check that no secret the
 * mock saw or handed out is in a run's output.
 */
import { afterAll, beforeAll } from "@effect/vitest"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Cli from "./Cli.js"
import { expectNone } from "./Leaks.js"

export const [ELEANOR, MARCUS, PRIYA] = MockClinicalServer.fixturePersons
export const APP = MockClinicalServer.demoApplicationId
export const UIDS = [ELEANOR!.personUid, MARCUS!.personUid, PRIYA!.personUid]

export let mock: MockClinicalServer.Started
export let dir = ""

/** Starts the mock and makes the folder (named from `prefix`) before the file's tests; closes and removes them after. */
export const setUpCli = (prefix = "effect-clinical-cli-"): void => {
  beforeAll(async () => ({ dir, mock } = await Cli.setUp(prefix)))
  afterAll(() => Cli.tearDown({ dir, mock }))
}

export const envOf = Cli.settingsFor

/** Every secret the mock saw or handed out: the ApplicationId, every token, every PersonUid, the pass codes and birth dates. */
export const secretsOf = async (server: MockClinicalServer.Started = mock) => {
  const tokens = (await server.requestLog()).flatMap((request) => {
    const authorization = Object.entries(request.headers).find(([name]) => name.toLowerCase() === "authorization")
    return authorization === undefined ? [] : [authorization[1].replace(/^Bearer /, "")]
  })
  return [
    ...new Set([
      APP,
      ...tokens,
      ...server.persons.flatMap((person) => [person.personUid, person.passCode, person.dateOfBirth])
    ])
  ]
}

export const expectNoSecretIn = async (ran: Cli.Ran, server?: MockClinicalServer.Started) => {
  const secrets = await secretsOf(server)
  expectNone("stdout", ran.stdout, secrets)
  expectNone("stderr", ran.stderr, secrets)
}

/** Writes `text` to the file `name` in the folder; its path. */
export const file = (name: string, text: string) => {
  const path = Path.join(dir, name)
  Fs.writeFileSync(path, text)
  return path
}

/** A directory of the test's own (owner-only), holding `files`. */
export const workspace = (name: string, files: Readonly<Record<string, string>> = {}) => {
  const path = Path.join(dir, name)
  Fs.mkdirSync(path, { mode: 0o700 })
  for (const [file, text] of Object.entries(files)) Fs.writeFileSync(Path.join(path, file), text)
  return path
}

/** A persons file's text: the fixture persons, one a line. */
export const PERSONS = UIDS.join("\n") + "\n"
