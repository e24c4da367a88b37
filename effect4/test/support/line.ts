/**
 * The Effect 4 line as the shared specifications drive it (spec/driver.ts): a flow's steps run
 * against a client over the spec's fake service in memory, under TestClock moved a step at a time,
 * or against a client of a real server over undici or `effect/http`'s fetch client, on the live
 * clock; every log line captured (logfmt and JSON, every level), every text of a failure a user
 * could print handed back.
 */
import {
  Cause,
  Clock,
  Effect,
  Exit,
  Fiber,
  Formatter,
  Layer,
  Logger,
  Random,
  Redacted,
  References,
  Schema,
  Tracer
} from "effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import { TestClock } from "effect/testing"
import type {
  Driver,
  Failure,
  Networked,
  NetworkStep,
  Observed,
  ObservedAt,
  Outcome,
  PersonRef,
  Step,
  Transport
} from "../../../spec/driver.js"
import { APPLICATION_ID, BASE_URL, type FakeService } from "../../../spec/fakeService.js"
import * as ClinicalClient from "../../src/ClinicalClient.js"
import * as HttpTransport from "../../src/HttpTransport.js"
import * as MedicationService from "../../src/MedicationService.js"
import * as PersonAuthentication from "../../src/PersonAuthentication.js"
import * as PersonData from "../../src/PersonData.js"
import * as TokenService from "../../src/TokenService.js"

/** The fake as this line's in-memory transport, on Effect's clock. */
const transportOf = (fake: FakeService) =>
  HttpTransport.layerMemory((request) =>
    Effect.clockWith((clock) => {
      const reply = fake.handle({
        method: request.method,
        url: request.url,
        headers: HttpTransport.wireHeaders(request),
        body: HttpTransport.wireBody(request)
      }, clock.currentTimeMillisUnsafe())
      switch (reply._tag) {
        case "Respond":
          return reply.afterMillis === undefined
            ? Effect.succeed(reply.response)
            : Effect.as(Effect.sleep(reply.afterMillis), reply.response)
        case "Fail":
          return Effect.fail(HttpTransport.transportError(request, reply.reason, reply.detail))
        case "Hang":
          return Effect.never
      }
    })
  )

const Named = Schema.Struct({ Name: Schema.String })
const NumbersByKey = Schema.Record(Schema.String, Schema.Number)

const stepOf = (
  fake: FakeService,
  step: Step
): Effect.Effect<unknown, unknown, MedicationService.MedicationService | TokenService.TokenService> => {
  switch (step._tag) {
    case "Medications":
      return MedicationService.get(
        step.redacted === true ? Redacted.make(step.personUid) : step.personUid,
        step.startDate === undefined ? undefined : { startDate: step.startDate }
      )
    case "MedicationsAs":
      return MedicationService.getAs(Named, step.personUid)
    case "LogToken":
      return TokenService.TokenService.use((tokens) =>
        Effect.flatMap(tokens.get, (token) => Effect.log("token", token, "person", Redacted.make(step.personUid)))
      )
    case "Advance":
      return TestClock.adjust(step.millis)
    case "RevokeAll":
      return Effect.sync(() => fake.revokeAll())
  }
}

/**
 * Runs `effect` to its end under TestClock, moving the clock 100 ms at a time, or as far as `step`
 * says from its time (backoffs and timeouts fire).
 */
const runWithClock = <A, E, R>(effect: Effect.Effect<A, E, R>, step = (_nowMillis: number) => 100, maxSteps = 10_000) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(effect)
    for (let i = 0; i < maxSteps; i++) {
      if (fiber.pollUnsafe() !== undefined) return yield* Fiber.join(fiber)
      yield* TestClock.adjust(step(yield* Clock.currentTimeMillis))
    }
    return yield* Effect.die(`still running after ${maxSteps} clock steps`)
  })

/** Every text a user could print of a failed exit. */
const failureTexts = (exit: Exit.Exit<unknown, unknown>): Array<readonly [string, string]> => {
  if (Exit.isSuccess(exit)) return []
  const texts: Array<readonly [string, string]> = [
    ["cause", Cause.pretty(exit.cause)],
    ["cause JSON", JSON.stringify(exit.cause)]
  ]
  for (const reason of exit.cause.reasons) {
    if (reason._tag !== "Fail") continue
    const error = reason.error
    texts.push(["String(error)", String(error)], ["JSON.stringify(error)", JSON.stringify(error)])
    texts.push(["format(error)", Formatter.format(error)], ["error.stack", (error as Error).stack ?? ""])
  }
  return texts
}

/** Every log line, at every level, in logfmt and in JSON. */
const captureLogs = () => {
  const lines: Array<string> = []
  const layer = Layer.mergeAll(
    Logger.layer([
      Logger.map(Logger.formatLogFmt, (line) => void lines.push(line)),
      Logger.map(Logger.formatJson, (line) => void lines.push(line))
    ]),
    Layer.succeed(References.MinimumLogLevel, "All")
  )
  return { lines, layer }
}

/** A failure as plain data: its tag, message and fields. */
const plain = (error: unknown): Failure => {
  const { _tag, message } = error as { readonly _tag: string; readonly message: string }
  return { ...(error as object), _tag, message }
}

/** The first typed failure of a cause, if any. */
const failureIn = (cause: Cause.Cause<unknown>): { readonly error: unknown } | undefined =>
  cause.reasons.find((reason) => reason._tag === "Fail")

const transports: Record<Transport, () => Layer.Layer<HttpTransport.HttpTransport, unknown>> = {
  undici: () => HttpTransport.layerUndici(),
  fetch: () => HttpTransport.layerHttpClient.pipe(Layer.provide(FetchHttpClient.layer)),
  "fetch following redirects": () =>
    HttpTransport.layerHttpClient.pipe(
      Layer.provide(Layer.effect(
        HttpClient.HttpClient,
        Effect.map(HttpClient.HttpClient, (client) => HttpClient.followRedirects(client))
      )),
      Layer.provide(FetchHttpClient.layer)
    ),
  "fetch with a RequestInit": () =>
    HttpTransport.layerHttpClient.pipe(
      Layer.provide(FetchHttpClient.layer),
      Layer.provide(Layer.succeed(FetchHttpClient.RequestInit, { headers: { "x-proxy-authorization": "proxy" } }))
    )
}

/** A tracer that keeps every span it makes. */
export const capturingTracer = () => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span: (options) => {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { spans, tracer }
}

/** A flow over a network: each step's outcome recorded, every failure's texts and logged cause kept. */
const networkFlow = (steps: ReadonlyArray<NetworkStep>, texts: Array<readonly [string, string]>) => {
  let token: TokenService.AccessToken | undefined
  let authenticated: Redacted.Redacted<string> | undefined
  const forked: Array<Fiber.Fiber<Outcome>> = []
  const person = (ref: PersonRef): Effect.Effect<string | Redacted.Redacted<string>> =>
    typeof ref === "string"
      ? Effect.succeed(ref)
      : authenticated === undefined
      ? Effect.die(new Error("no Authenticate step before"))
      : Effect.succeed(authenticated)
  const outcomeOf = (step: NetworkStep): Effect.Effect<Outcome, never, ClinicalClient.Services> =>
    Effect.exit(valueOf(step)).pipe(Effect.flatMap((exit) => {
      if (Exit.isSuccess(exit)) return Effect.succeed<Outcome>({ _tag: "Success", value: exit.value })
      texts.push(...failureTexts(exit))
      const failure = failureIn(exit.cause)
      // As an application logs what went wrong: its cause, at error level.
      return Effect.andThen(
        Effect.logError("call failed", exit.cause),
        failure !== undefined
          ? Effect.succeed<Outcome>({ _tag: "Failure", error: plain(failure.error) })
          : Effect.failCause(exit.cause as Cause.Cause<never>)
      )
    }))
  const valueOf = (step: NetworkStep): Effect.Effect<unknown, unknown, ClinicalClient.Services> => {
    switch (step._tag) {
      case "Medications":
        return Effect.flatMap(
          person(step.personUid),
          (personUid) => Effect.map(MedicationService.get(personUid), ({ medications }) => ({ medications }))
        )
      case "MedicationsAs":
        return step.schema === "Named"
          ? Effect.map(MedicationService.getAs(Named, step.personUid), ({ medications }) => ({ medications }))
          : Effect.map(MedicationService.getAs(NumbersByKey, step.personUid), ({ medications }) => ({ medications }))
      case "Authenticate":
        return Effect.map(
          PersonAuthentication.authenticate({ passCode: step.passCode, dateOfBirth: step.dateOfBirth }),
          (personUid) => {
            authenticated = personUid
            return { personUid: Redacted.value(personUid) }
          }
        )
      case "PersonData": {
        const operation = PersonData[step.operation]
        const range = {
          ...(step.startDate === undefined ? {} : { startDate: step.startDate }),
          ...(step.endDate === undefined ? {} : { endDate: step.endDate })
        }
        return Effect.flatMap(person(step.personUid), (personUid) =>
          step.as === "Ethnicity"
            ? Effect.map(
              PersonData.getAs(operation, PersonData.Ethnicity, personUid, range),
              ({ items }) => ({ items })
            )
            : Effect.map(PersonData.get(operation, personUid, range), ({ items }) => ({ items })))
      }
      case "Token":
        return TokenService.TokenService.use((tokens) =>
          Effect.map(tokens.get, (got) => {
            token = got
            const { expiresAt, generation, issuedAt, lifetimeMillis, serverClockSkewMillis, serverLifetimeMillis } = got
            return { generation, issuedAt, expiresAt, lifetimeMillis, serverLifetimeMillis, serverClockSkewMillis }
          })
        )
      case "InvalidateToken": {
        const held = token
        return held === undefined
          ? Effect.die(new Error("no Token step before"))
          : TokenService.TokenService.use((tokens) => tokens.invalidate(held))
      }
      case "Sleep":
        return Effect.sleep(step.millis)
      case "Await":
        return Effect.promise(step.what)
      case "Concurrently":
        return Effect.forEach(Array.from({ length: step.count }), () => outcomeOf(step.step), {
          concurrency: "unbounded"
        })
      case "All":
        return Effect.forEach(step.steps, outcomeOf, { concurrency: step.concurrency ?? "unbounded" })
      case "Fork":
        return Effect.flatMap(
          Effect.forEach(Array.from({ length: step.count }), () => Effect.forkChild(outcomeOf(step.step))),
          (fibers) => Effect.sync(() => void forked.push(...fibers))
        )
      case "InterruptForked":
        return Fiber.interruptAll(forked.splice(0))
      case "JoinForked":
        return Fiber.joinAll(forked.splice(0))
    }
  }
  return Effect.forEach(steps, outcomeOf)
}

const networked: Networked = {
  transports: [["undici", ["effect path", "common path"]], ["fetch", ["effect path"]]],
  runAt: (baseUrl, transport, path, steps, settings, traced = false) =>
    Effect.runPromise(Effect.gen(function*() {
      const { layer, lines } = captureLogs()
      const { spans, tracer } = capturingTracer()
      const texts: Array<readonly [string, string]> = []
      const started = Date.now()
      const firstToken = path === "common path" ? TokenService.TokenService.use((tokens) => tokens.get) : Effect.void
      const exit = yield* Effect.andThen(firstToken, networkFlow(steps, texts)).pipe(
        Effect.provide(ClinicalClient.layer({ baseUrl, ...settings }).pipe(Layer.provide(transports[transport]()))),
        Effect.tapCause((cause) => Effect.logError("flow failed", cause)),
        Effect.exit,
        Effect.provide(layer),
        traced ? Effect.withTracer(tracer) : (effect) => effect
      )
      return observedAt(exit, lines, texts, Date.now() - started, spans)
    }))
}

/** What a user saw of a flow that ended in `exit`. */
const observedAt = (
  exit: Exit.Exit<ReadonlyArray<Outcome>, unknown>,
  lines: ReadonlyArray<string>,
  texts: Array<readonly [string, string]>,
  elapsedMillis: number,
  spans: ReadonlyArray<Tracer.NativeSpan>
): ObservedAt => {
  texts.push(...failureTexts(exit))
  const outcomes = Exit.isSuccess(exit) ? exit.value : []
  const failed = Exit.isFailure(exit) ? failureIn(exit.cause) : undefined
  if (Exit.isFailure(exit) && failed === undefined) throw new Error(Cause.pretty(exit.cause))
  const failure = failed !== undefined
    ? plain(failed.error)
    : outcomes.find((outcome) => outcome._tag === "Failure")?.error
  return {
    logLines: lines,
    failureTag: failure?._tag,
    failureTexts: texts,
    failure,
    outcomes,
    elapsedMillis,
    spanAttributes: spans.flatMap((span) => [...span.attributes].map(([key, value]) => [key, String(value)] as const))
  }
}

/** The retries' jitter fixed at the middle: a retry waits 3/4 of its exponential step. */
const middleJitter = Effect.provideService(Random.Random, { nextDoubleUnsafe: () => 0.5, nextIntUnsafe: () => 0 })

export const driver: Driver = {
  line: "Effect 4",
  networked,
  inMemory: (fake, steps, { clockToEachAnswer = false, ...settings } = {}) =>
    Effect.runPromise(
      Effect.gen(function*() {
        const { layer, lines } = captureLogs()
        const texts: Array<readonly [string, string]> = []
        const exit = yield* networkFlow(steps, texts).pipe(
          Effect.provide(
            ClinicalClient.layer({ baseUrl: BASE_URL, applicationId: APPLICATION_ID, ...settings }).pipe(
              Layer.provide(transportOf(fake))
            )
          ),
          Effect.tapCause((cause) => Effect.logError("flow failed", cause)),
          Effect.exit,
          (flow) =>
            clockToEachAnswer
              ? runWithClock(flow, (now) => fake.clockStepMillis(now, 100), 1_000_000)
              : runWithClock(flow),
          Effect.provide(layer),
          middleJitter
        )
        return observedAt(exit, lines, texts, yield* Clock.currentTimeMillis, [])
      }).pipe(Effect.provide(TestClock.layer()))
    ),
  run: (fake, steps, overrides = {}) =>
    Effect.runPromise(
      Effect.gen(function*() {
        const { layer, lines } = captureLogs()
        const flow = Effect.forEach(steps, (step) => stepOf(fake, step), { discard: true })
        const exit = yield* flow.pipe(
          Effect.provide(
            ClinicalClient.layer({ baseUrl: BASE_URL, applicationId: APPLICATION_ID, ...overrides }).pipe(
              Layer.provide(transportOf(fake))
            )
          ),
          // As an application logs what went wrong: its cause, at error level.
          Effect.tapCause((cause) => Effect.logError("flow failed", cause)),
          Effect.exit,
          runWithClock,
          Effect.provide(layer)
        )
        const failure = Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail") : undefined
        const observed: Observed = {
          logLines: lines,
          failureTag: failure === undefined ? undefined : (failure.error as { readonly _tag: string })._tag,
          failureTexts: failureTexts(exit)
        }
        return observed
      }).pipe(Effect.provide(TestClock.layer()))
    )
}
