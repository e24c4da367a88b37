/**
 * `effect-clinical queue`: the commands, their options checked; the work is queueJob.ts's, loaded
 * when a queue command runs, with BullMQ and ioredis (optional peers: a usage error names them
 * when they are not installed).
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as PersonData from "../PersonData.js"
import { settingsFile } from "./environment.js"
import { metricsOptions, withTelemetry } from "./observed.js"
import { type CliError, usage } from "./outcome.js"

const QueueJob = Effect.tryPromise({
  try: () => import("./queueJob.js"),
  catch: (error) => {
    const text = String((error as Error)?.message ?? error)
    return /bullmq|ioredis/.test(text) && (error as NodeJS.ErrnoException)?.code === "ERR_MODULE_NOT_FOUND"
      ? usage("queue commands need BullMQ and ioredis beside effect-clinical: npm install bullmq@^6.7 ioredis@^5")
      : usage(`queue commands could not be loaded: ${(error as NodeJS.ErrnoException)?.code ?? "error"}`)
  }
})

const Dashboard = Effect.tryPromise({
  try: () => import("./dashboard.js"),
  catch: (error) => {
    const text = String((error as Error)?.message ?? error)
    return /bull-board|express|bullmq|ioredis/.test(text) &&
        (error as NodeJS.ErrnoException)?.code === "ERR_MODULE_NOT_FOUND"
      ? usage(
        "queue dashboard needs bull-board and Express beside effect-clinical: " +
          "npm install @bull-board/api@9.10.1 @bull-board/express@9.10.1 express@^5 bullmq@^6.7 ioredis@^5"
      )
      : usage(`queue dashboard could not be loaded: ${(error as NodeJS.ErrnoException)?.code ?? "error"}`)
  }
})

const queue = Options.text("queue").pipe(
  Options.withDescription("the queue's name (default effect-clinical)"),
  Options.withDefault("effect-clinical")
)

/** An option, described, that may be left out. */
export const optional = <A>(option: Options.Options<A>, description: string) =>
  option.pipe(Options.withDescription(description), Options.optional)

/** A number option, described, with its default. */
const withDefault = (option: Options.Options<number>, description: string, fallback: number) =>
  option.pipe(Options.withDescription(description), Options.withDefault(fallback))

const QUEUE_NAME = /^[A-Za-z0-9_.-]{1,64}$/

const checkedQueue = (name: string): Effect.Effect<string, CliError> =>
  QUEUE_NAME.test(name)
    ? Effect.succeed(name)
    : Effect.fail(usage("--queue must be 1 to 64 letters, digits, '_', '.' or '-'"))

const wholeNumber = (
  name: string,
  value: Option.Option<number>,
  max: number
): Effect.Effect<number | undefined, CliError> =>
  Option.match(value, {
    onNone: () => Effect.succeed(undefined),
    onSome: (n) =>
      Number.isInteger(n) && n >= 1 && n <= max
        ? Effect.succeed(n)
        : Effect.fail(usage(`--${name} must be a whole number from 1 to ${max}`))
  })

const seconds = (name: string, value: Option.Option<number>, min: number, max: number) =>
  Option.match(value, {
    onNone: () => Effect.succeed(undefined),
    onSome: (n) =>
      n >= min && n <= max
        ? Effect.succeed(Duration.millis(n * 1000))
        : Effect.fail(usage(`--${name} must be from ${min} to ${max} seconds`))
  })

/** What the queue commands take from app.ts: operations by name, and the date options with their check. */
export interface Shared {
  /** Every operation the command line knows: a worker reads the one each job names. */
  readonly operations: ReadonlyArray<PersonData.Operation>
  readonly operationNamed: (name: string) => Effect.Effect<PersonData.Operation, CliError>
  readonly dates: (options: {
    readonly startDate: Option.Option<string>
    readonly endDate: Option.Option<string>
  }) => Effect.Effect<{ readonly startDate: string | undefined; readonly endDate: string | undefined }, CliError>
  readonly dateOptions: {
    readonly startDate: Options.Options<Option.Option<string>>
    readonly endDate: Options.Options<Option.Option<string>>
  }
}

const enqueueCommand = ({ dateOptions, dates, operationNamed }: Shared) =>
  Command.make("enqueue", {
    settingsFile,
    queue,
    operation: Args.text({ name: "operation" }),
    personsFile: Options.file("persons-file").pipe(Options.withDescription("the PersonUids, one per line")),
    attempts: optional(Options.integer("attempts"), "attempts per person before it fails (default 5)"),
    again: Options.boolean("again").pipe(
      Options.withDescription("enqueue a file whose enqueue finished before anew (another run of the same input)")
    ),
    fleetConcurrency: optional(Options.integer("fleet-concurrency"), "jobs active at once across all workers"),
    rate: optional(Options.integer("rate"), "jobs started per second across all workers"),
    maxWaiting: optional(
      Options.integer("max-waiting"),
      "most jobs waiting at once: beyond it, wait for the workers (about 1 KB of Redis each)"
    ),
    ...dateOptions
  }, (options) =>
    Effect.gen(function*() {
      const range = yield* dates(options)
      yield* (yield* QueueJob).enqueue({
        settingsFile: options.settingsFile,
        queue: yield* checkedQueue(options.queue),
        operation: yield* operationNamed(options.operation),
        personsFile: options.personsFile,
        ...range,
        attempts: yield* wholeNumber("attempts", options.attempts, 100),
        again: options.again,
        fleetConcurrency: yield* wholeNumber("fleet-concurrency", options.fleetConcurrency, 1_000_000),
        rate: yield* wholeNumber("rate", options.rate, 1_000_000),
        maxWaiting: yield* wholeNumber("max-waiting", options.maxWaiting, 1_000_000_000)
      })
    })).pipe(Command.withDescription(
      "Add one job per person of a file to a BullMQ queue (PersonUids sealed; the same file again adds nothing).\n" +
        "Example: effect-clinical queue enqueue medications --persons-file persons.txt"
    ))

const workCommand = ({ operations }: Shared) =>
  Command.make("work", {
    settingsFile,
    queue,
    workers: withDefault(
      Options.integer("workers"),
      "BullMQ workers in this process (default 1; or one process per container)",
      1
    ),
    concurrency: withDefault(Options.integer("concurrency"), "jobs each worker runs at once (default 16)", 16),
    // Text, checked by the command itself: a path that cannot be a directory is a usage error, named.
    shards: Options.text("shards").pipe(
      Options.withDescription("directory this process appends its results shard to (default queue-results)"),
      Options.withDefault("queue-results")
    ),
    lockDuration: optional(
      Options.float("lock-duration"),
      "seconds a job stays locked to a worker that stopped renewing it (default 9)"
    ),
    stalledInterval: optional(
      Options.float("stalled-interval"),
      "seconds between checks for jobs whose worker died (default 5)"
    ),
    untilEmpty: Options.boolean("until-empty").pipe(
      Options.withDescription("stop once no job is waiting, active or delayed (else: until SIGTERM or Ctrl-C)")
    ),
    progressEvery: optional(
      Options.float("progress-every"),
      "seconds between progress reports on stderr (default: 1 at a terminal, a bar; else 10, a line each)"
    ),
    ...metricsOptions
  }, (options) =>
    Effect.gen(function*() {
      const interactive = process.stderr.isTTY === true
      const every = yield* seconds(
        "progress-every",
        Option.orElse(options.progressEvery, () => Option.some(interactive ? 1 : 10)),
        0.05,
        86_400
      )
      const work = {
        settingsFile: options.settingsFile,
        queue: yield* checkedQueue(options.queue),
        operations,
        workers: (yield* wholeNumber("workers", Option.some(options.workers), 64))!,
        concurrency: (yield* wholeNumber("concurrency", Option.some(options.concurrency), 10_000))!,
        shards: options.shards,
        lockDuration: yield* seconds("lock-duration", options.lockDuration, 1, 3600),
        stalledInterval: yield* seconds("stalled-interval", options.stalledInterval, 1, 3600),
        untilEmpty: options.untilEmpty,
        progressEvery: every!,
        interactive
      }
      const queueJob = yield* QueueJob
      yield* withTelemetry(options, (gauges) => queueJob.work({ ...work, gauges }))
    })).pipe(Command.withDescription(
      "Process the queue's jobs, results appended to a shard of --shards; SIGTERM finishes the active jobs and stops.\n" +
        "Example: effect-clinical queue work --workers 2 --shards /shared/results"
    ))

const statusCommand = Command.make("status", {
  settingsFile,
  queue,
  json: Options.boolean("json").pipe(Options.withDescription("print JSON instead of a table")),
  sample: withDefault(Options.float("sample"), "seconds to watch for the rate and ETA (default 1; 0: none)", 1),
  ...metricsOptions
}, (options) =>
  Effect.gen(function*() {
    const status = {
      settingsFile: options.settingsFile,
      queue: yield* checkedQueue(options.queue),
      json: options.json,
      sample: (yield* seconds("sample", Option.some(options.sample), 0, 600))!
    }
    const queueJob = yield* QueueJob
    yield* withTelemetry(options, (gauges) => queueJob.status({ ...status, gauges }))
  })).pipe(Command.withDescription(
    "The queue's jobs by state, its rate and ETA, failures by kind, and why it is paused. With --metrics-port, " +
      "it then serves the queue's gauges (read from Redis for each scrape) until SIGTERM or Ctrl-C."
  ))

const collectCommand = Command.make("collect", {
  settingsFile,
  queue,
  shards: Options.directory("shards", { exists: "yes" }).pipe(
    Options.withDescription("the directory the workers wrote their shards to (default queue-results)"),
    Options.withDefault("queue-results")
  ),
  out: Options.file("out").pipe(Options.withDescription("the merged results, one line per person in input order")),
  run: optional(Options.integer("run"), "the run to collect (default: the queue's latest)"),
  persons: optional(
    Options.integer("persons"),
    "persons the run enqueued (default: the queue's record; with --run, no Redis is needed)"
  )
}, (options) =>
  Effect.gen(function*() {
    yield* (yield* QueueJob).collect({
      settingsFile: options.settingsFile,
      queue: yield* checkedQueue(options.queue),
      shards: options.shards,
      out: options.out,
      run: yield* wholeNumber("run", options.run, Number.MAX_SAFE_INTEGER),
      persons: yield* wholeNumber("persons", options.persons, 50_000_000)
    })
  })).pipe(Command.withDescription(
    "Merge a run's shards into one results file: each person once (a success over a failure), in input order; " +
      "exit 3 when anyone is missing or failed."
  ))

const dashboardCommand = Command.make("dashboard", {
  settingsFile,
  queue,
  port: withDefault(Options.integer("port"), "port to serve the dashboard on (default 3000; 0: any free one)", 3000),
  host: Options.text("host").pipe(
    Options.withDescription(
      "address to serve it on (default 127.0.0.1; beyond loopback, CLINICAL_DASHBOARD_PASSWORD is required)"
    ),
    Options.withDefault("127.0.0.1")
  )
}, (options) =>
  Effect.gen(function*() {
    if (!(Number.isInteger(options.port) && options.port >= 0 && options.port <= 65_535)) {
      return yield* Effect.fail(usage("--port must be a port number from 0 to 65535"))
    }
    if (!/^[A-Za-z0-9.:[\]-]{1,253}$/.test(options.host)) {
      return yield* Effect.fail(usage("--host must be a host name or an address"))
    }
    const job = {
      settingsFile: options.settingsFile,
      queue: yield* checkedQueue(options.queue),
      host: options.host,
      port: options.port
    }
    return yield* (yield* Dashboard).dashboard(job)
  })).pipe(Command.withDescription(
    "Serve bull-board over the queue, read-only: counts, throughput, jobs by run and position, failed jobs with " +
      "their typed reason; never a PersonUid. Loopback unless --host; beyond it, basic auth " +
      "(CLINICAL_DASHBOARD_USER, default effect-clinical, and CLINICAL_DASHBOARD_PASSWORD).\n" +
      "Example: effect-clinical queue dashboard --port 3000"
  ))

const plainCommand = (name: string, description: string, run: "retryFailed" | "resume") =>
  Command.make(name, { settingsFile, queue }, (options) =>
    Effect.gen(function*() {
      yield* (yield* QueueJob)[run]({ settingsFile: options.settingsFile, queue: yield* checkedQueue(options.queue) })
    })).pipe(Command.withDescription(description))

/** The `queue` command and its subcommands. */
export const queueCommand = (shared: Shared) =>
  Command.make("queue").pipe(
    Command.withDescription(
      "Bulk reads across processes and machines on BullMQ (Redis from CLINICAL_REDIS_URL, PersonUids sealed with " +
        "CLINICAL_SEALING_KEY). See docs/distributed.md."
    ),
    Command.withSubcommands([
      enqueueCommand(shared),
      workCommand(shared),
      statusCommand,
      collectCommand,
      dashboardCommand,
      plainCommand("retry-failed", "Put every failed job back to waiting, its attempts afresh.", "retryFailed"),
      plainCommand("resume", "Resume a queue a worker paused (refused credentials) once the cause is fixed.", "resume")
    ])
  )
