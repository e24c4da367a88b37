/**
 * Hand mutants of the queue's command line (src/cli/queue*.ts and what only the built executable
 * runs), where Stryker cannot reach: its tests start the built executable against a real
 * redis-server. Each mutant is applied to the source, the executable rebuilt, the tests that
 * should notice it run, and the source restored; the figures are printed, and each survivor named.
 *
 *   npm run mutate:queue-cli [-- --only <name>]
 *
 * A mutant is one small, plausible bug: a check dropped, a bound moved, a value passed wrong.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { option } from "./bench/args.js"

interface Mutant {
  readonly name: string
  readonly file: string
  readonly find: string
  readonly replace: string
  /** The test files (and, after `-t`, the test names) that should fail with it. */
  readonly tests: ReadonlyArray<string>
  readonly only?: string
}

const JOB = "src/cli/queueJob.ts"
const REDIS = "src/cli/queueRedis.ts"
const WORK = "src/cli/queueWork.ts"
const PROGRESS = "src/cli/queueProgress.ts"
const SHARDS = "src/cli/resultShards.ts"
const mutants: ReadonlyArray<Mutant> = [
  {
    name: "Redis errors not scrubbed of the URL's secrets",
    file: REDIS,
    find: "redactor(secretsOf(Redacted.value(url)))(text)",
    // The scrubber made and never applied: it builds (tsc refuses unused locals).
    replace: "((_scrub: unknown) => text)(redactor(secretsOf(Redacted.value(url))))",
    tests: ["test/QueueCli.test.ts"],
    only: "repeats the command it refuses"
  },
  {
    name: "a query password not counted a secret",
    file: REDIS,
    find: "const SECRET_OPTION = /pass|secret|token|key/i",
    replace: "const SECRET_OPTION = /^$/",
    tests: ["test/QueueCli.test.ts"],
    only: "repeats the command it refuses"
  },
  {
    name: "the URL shown with its query",
    file: REDIS,
    find: "return Render.printable(`${parsed.protocol}//${parsed.host}${db}`)",
    replace: "return Render.printable(`${parsed.protocol}//${parsed.host}${db}${parsed.search}`)",
    tests: ["test/QueueCli.test.ts"],
    only: "never shown"
  },
  {
    name: "the URL shown with its password",
    file: REDIS,
    find: "return Render.printable(`${parsed.protocol}//${parsed.host}${db}`)",
    replace: "return Render.printable(parsed.href + db.slice(0, 0))",
    tests: ["test/QueueCli.test.ts"],
    only: "never shown"
  },
  {
    name: "--until-empty stops while jobs are retrying (delayed)",
    file: PROGRESS,
    find: "now.waiting + now.prioritized + now.active + now.delayed\n",
    replace: "now.waiting + now.prioritized + now.active\n",
    tests: ["test/QueueCli.test.ts"],
    only: "retrying \\(delayed\\)"
  },
  {
    name: "--until-empty stops while an enqueue still adds jobs",
    file: PROGRESS,
    find: "leftIn(now) === 0 && !now.enqueuing",
    replace: "leftIn(now) === 0",
    tests: ["test/QueueCli.test.ts"],
    only: "while an enqueue"
  },
  {
    name: "the input id ignores the date range",
    file: JOB,
    find: "[sha256, job.operation.name, job.startDate ?? \"\", job.endDate ?? \"\"].join(\"\\n\")",
    replace: "[sha256, job.operation.name].join(\"\\n\")",
    tests: ["test/QueueCli.test.ts"],
    only: "date range is part of the input"
  },
  {
    name: "the token store's key derived under the job seal's purpose",
    file: REDIS,
    find: "derivedKey(bytes, \"effect-clinical token store\")",
    replace: "derivedKey(bytes, \"effect-clinical queue: persons\")",
    tests: ["test/QueueCli.test.ts"],
    only: "joins the fleet's token"
  },
  {
    name: "one-off commands wait for Redis without a bound",
    file: REDIS,
    find: "  connectTimeout: ONE_OFF_ANSWER_MILLIS,\n  commandTimeout: ONE_OFF_ANSWER_MILLIS\n",
    replace: "",
    tests: ["test/QueueCli.test.ts"],
    only: "answers PING and then nothing"
  },
  {
    name: "a silent Redis reported as a usage error",
    file: REDIS,
    find: "if (/Command timed out|did not answer within/.test(error.detail)) {",
    replace: "if (/Command timed out/.test(error.detail)) {",
    tests: ["test/QueueCli.test.ts"],
    only: "a Redis error saying"
  },
  {
    name: "Command aborted not taken for an unreachable Redis",
    file: REDIS,
    find: "/Connection is closed|Command aborted|ECONNREFUSED",
    replace: "/Connection is closed|ECONNREFUSED",
    tests: ["test/QueueCli.test.ts"],
    only: "a Redis error saying"
  },
  {
    name: "a failed shard write counted done",
    file: WORK,
    find:
      "    // Counted once written: a line the disk refused is no person done.\n    if (record.outcome === \"Success\") counts.done++\n    else counts.failed++\n",
    replace: "",
    tests: ["test/QueueCli.test.ts"],
    only: "full disk"
  },
  {
    name: "shard lines not durable",
    file: SHARDS,
    find: "wholeLines(handle, { durable: true })",
    replace: "wholeLines(handle, { durable: false })",
    tests: ["test/ResultShards.test.ts"],
    only: "lines appended at once land whole"
  },
  {
    name: "the shards directory checked after the first result only",
    file: WORK,
    find: "      try: () => shardDirectory(job.shards),",
    replace: "      try: () => Promise.resolve([job.shards, shardDirectory]),",
    tests: ["test/QueueCli.test.ts"],
    only: "shards directory"
  },
  {
    name: "collect exits 0 with persons missing",
    file: JOB,
    find: "  if (collected.missing > 0) {\n",
    replace: "  if (false) {\n",
    tests: ["test/QueueCli.test.ts"],
    only: "knows how many persons"
  },
  {
    name: "collect's --out failure named as the shards'",
    file: JOB,
    find: "    message: out === true\n",
    replace: "    message: false\n",
    tests: ["test/QueueCli.test.ts"],
    only: "--out in a directory"
  },
  {
    name: "a failure kind from Redis shown raw",
    file: JOB,
    find: "second.failedByKind.map(([kind, count]) => [Render.printable(kind), count] as const)",
    replace: "second.failedByKind.map(([kind, count]) => [kind, count] as const)",
    tests: ["test/QueueCli.test.ts"],
    only: "printable"
  },
  {
    name: "the worker reads the queue's record of its operation, not the job's",
    file: WORK,
    find: "          operation: job.operations,\n",
    replace: "          operation: job.operations.filter((each) => each.name === before.operation),\n",
    tests: ["test/QueueCli.test.ts"],
    only: "forged record of the queue's operation"
  }
]

const root = Path.resolve(import.meta.dirname, "..")
const onlyName = option("--only", "")
const chosen = mutants.filter((mutant) => onlyName === "" || mutant.name.includes(onlyName))
const run = (command: string, args: ReadonlyArray<string>) =>
  spawnSync(command, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8", timeout: 30 * 60_000 })

// Every mutant's text is checked before any is applied: a text edited away since would otherwise
// stop the run half-way, or (worse) be counted.
const locate = (mutant: Mutant) => {
  const original = Fs.readFileSync(Path.join(root, mutant.file), "utf8")
  const at = original.indexOf(mutant.find)
  if (at < 0 || original.indexOf(mutant.find, at + 1) >= 0) {
    throw new Error(`mutant "${mutant.name}": its text is not found exactly once in ${mutant.file}`)
  }
  return { original, at }
}
chosen.forEach(locate)

/** The chosen tests, run; how many ran and how many failed (a filter that matches none kills nothing). */
const testsOf = (mutant: Mutant) => {
  const report = Path.join(root, ".scratch/mutant-report.json")
  Fs.rmSync(report, { force: true })
  run("npx", [
    "vitest",
    "run",
    ...mutant.tests,
    // One argument: a pattern that starts with "--" is otherwise read as an option of its own.
    ...(mutant.only === undefined ? [] : [`--testNamePattern=${mutant.only}`]),
    "--reporter=json",
    `--outputFile=${report}`
  ])
  const figures = Fs.existsSync(report)
    ? JSON.parse(Fs.readFileSync(report, "utf8")) as { numPassedTests: number; numFailedTests: number }
    : { numPassedTests: 0, numFailedTests: 0 }
  return { ran: figures.numPassedTests + figures.numFailedTests, failed: figures.numFailedTests }
}

// The unmutated code first: each mutant's tests must run and pass on it, or a kill means nothing
// (`--checked` skips this when it just passed on the same code: it takes minutes).
execFileSync("npm", ["run", "build"], { cwd: root, stdio: "ignore" })
for (const mutant of process.argv.includes("--checked") ? [] : chosen) {
  const { failed, ran } = testsOf(mutant)
  if (ran === 0 || failed > 0) {
    throw new Error(`mutant "${mutant.name}": its tests ran ${ran} and failed ${failed} on the unmutated code`)
  }
}

const results: Array<{ readonly name: string; readonly killed: boolean }> = []
const unbuilt: Array<string> = []
for (const mutant of chosen) {
  const path = Path.join(root, mutant.file)
  const { at, original } = locate(mutant)
  Fs.writeFileSync(path, original.slice(0, at) + mutant.replace + original.slice(at + mutant.find.length))
  try {
    // A mutant that does not build is no bug a test must notice: named, and left out of the score.
    if (run("npm", ["run", "build"]).status !== 0) {
      unbuilt.push(mutant.name)
      console.log(`NOT BUILT ${mutant.name}`)
      continue
    }
    const { failed } = testsOf(mutant)
    const killed = failed > 0
    results.push({ name: mutant.name, killed })
    console.log(`${killed ? "killed  " : "SURVIVED"}  ${mutant.name}`)
  } finally {
    Fs.writeFileSync(path, original)
  }
}
execFileSync("npm", ["run", "build"], { cwd: root, stdio: "ignore" })
const killed = results.filter((result) => result.killed).length
console.log(
  `\nqueue command line: ${killed} of ${results.length} hand mutants killed (${
    ((killed / results.length) * 100).toFixed(1)
  }%)`
)
for (const result of results.filter((each) => !each.killed)) console.log(`survived: ${result.name}`)
for (const name of unbuilt) console.log(`did not build (fix the mutant): ${name}`)
