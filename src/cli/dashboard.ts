/**
 * `effect-clinical queue dashboard`: bull-board (the queue UI BullMQ's users know) over one queue,
 * read-only: counts, throughput (BullMQ's own metrics), jobs by state with their names (`run N
 * index I`: the person's position in the run's input) and a failed job's typed reason. A job's data
 * is shown as sealed: the PersonUid never reaches the page, nor does the token or the ApplicationId
 * (the workers keep those; this command needs only CLINICAL_REDIS_URL).
 *
 * bull-board and Express are the application's (optional, as BullMQ is): bull-board's UI is a
 * directory of static files, served from where it is installed. Loaded only by this command;
 * queue.ts names the packages when they are absent.
 */
import { createBullBoard } from "@bull-board/api"
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter"
import { ExpressAdapter } from "@bull-board/express"
import { Queue } from "bullmq"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import express from "express"
import { ClinicalQueue } from "../bullmq.js"
import { type Access, accessOf, authorized, isLoopbackHost } from "./dashboardAccess.js"
import { configProvider } from "./environment.js"
import { listening, originOf } from "./listening.js"
import { CliError, ExitCode, usage } from "./outcome.js"
import { connection, hideSecrets, keyRefused, say, shownUrl, warner, withRedisUrlChecked } from "./queueRedis.js"

export interface DashboardJob {
  readonly settingsFile: Option.Option<string>
  readonly queue: string
  readonly host: string
  readonly port: number
}

/** What a job's data shows on the page: its person and request are sealed, and stay so. */
const SEALED = { sealed: "the PersonUid and the request, sealed with CLINICAL_SEALING_KEY (not shown)" }

const settings = (file: Option.Option<string>) =>
  Effect.flatMap(configProvider(file), (provider) =>
    Effect.withConfigProvider(
      Effect.all({
        redisUrl: Config.redacted("CLINICAL_REDIS_URL"),
        user: Config.withDefault(Config.string("CLINICAL_DASHBOARD_USER"), "effect-clinical"),
        password: Config.option(Config.redacted("CLINICAL_DASHBOARD_PASSWORD")),
        // Not needed to show the queue; when given, it must be the queue's (see keyRefused).
        sealingKey: Config.option(Config.redacted("CLINICAL_SEALING_KEY"))
      }),
      provider
    ).pipe(
      Effect.mapError(() => usage("queue dashboard needs CLINICAL_REDIS_URL (redis://host:port)")),
      withRedisUrlChecked
    ))

/** The Express app: basic auth first when asked (else loopback names alone), then bull-board's routes. */
const appOf = (router: express.Router, access: Access): express.Express => {
  const app = express()
  app.disable("x-powered-by")
  if (access === undefined) {
    app.use((request, response, next) => {
      if (isLoopbackHost(request.headers.host)) return next()
      response.status(403).type("text/plain").send(
        "forbidden: without a password, this dashboard answers to localhost only\n"
      )
    })
  } else {
    app.use((request, response, next) => {
      if (authorized(request.headers.authorization, access)) return next()
      response.set("WWW-Authenticate", "Basic realm=\"effect-clinical queue dashboard\", charset=\"UTF-8\"")
      response.status(401).type("text/plain").send("authentication required\n")
    })
  }
  app.use("/", router)
  return app
}

/** Serves the dashboard until the command is stopped (SIGTERM, Ctrl-C). */
export const dashboard = (job: DashboardJob): Effect.Effect<never, CliError> =>
  Effect.scoped(Effect.gen(function*() {
    const { password, redisUrl, sealingKey, user } = yield* settings(job.settingsFile)
    const access = accessOf(job.host, user, password._tag === "Some" ? Redacted.value(password.value) : undefined)
    if (typeof access === "string") return yield* Effect.fail(usage(access))
    // A page's request waits 10 s at most for Redis, and fails rather than queueing while it is away.
    const client = yield* connection(redisUrl, { maxRetriesPerRequest: 1, commandTimeout: 10_000 })
    yield* Effect.tryPromise({
      try: () => client.ping(),
      catch: () =>
        new CliError({
          message: `cannot reach Redis at ${shownUrl(Redacted.value(redisUrl))}`,
          code: ExitCode.Failure
        })
    })
    if (sealingKey._tag === "Some") {
      // A key given that is not the queue's: said, as every queue command says it, rather than
      // leaving an operator to believe the key the fleet is given is right.
      yield* Effect.mapError(
        ClinicalQueue.status({ connection: client, name: job.queue, sealingKey: sealingKey.value }, {
          failuresByKind: false
        }),
        (error) =>
          keyRefused(error) ?? (error._tag === "InvalidConfig"
            ? usage(error.message)
            : new CliError({ message: hideSecrets(error.message, redisUrl), code: ExitCode.Failure }))
      )
    }
    const warn = warner("queue dashboard")
    const queue = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const queue = new Queue(job.queue, { connection: client })
        // Else BullMQ prints each error whole (its stack, Redis's words) on the console.
        queue.on("error", (error: Error) => warn(hideSecrets(error.message, redisUrl)))
        return queue
      }),
      (queue) => Effect.promise(() => queue.close().catch(() => undefined))
    )
    const board = new BullMQAdapter(queue, {
      readOnlyMode: true,
      allowRetries: false,
      description: "effect-clinical: jobs are named by their run and input position; each person is sealed"
    })
    board.setFormatter("data", () => SEALED)
    const serverAdapter = new ExpressAdapter()
    serverAdapter.setBasePath("/")
    createBullBoard({
      queues: [board],
      serverAdapter,
      options: { uiConfig: { boardTitle: "effect-clinical" } }
    })
    const server = yield* listening(appOf(serverAdapter.getRouter(), access), job.host, job.port, "the dashboard")
    yield* say(
      `queue dashboard: ${originOf(server)}/ ` +
        `(bull-board, read-only, queue "${job.queue}", Redis ${shownUrl(Redacted.value(redisUrl))}` +
        `${access === undefined ? "" : "; basic auth"}); Ctrl-C stops`
    )
    return yield* Effect.never
  }))
