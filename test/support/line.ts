/**
 * The Effect 3 line as the shared specifications drive it (spec/driver.ts): a flow's steps run
 * against a client over the spec's fake service in memory, under TestClock moved a step at a time,
 * or against a client of a real server over undici or the platform's fetch client, on the live
 * clock; every log line captured, every text of a failure a user could print handed back.
 */
import { FetchHttpClient, HttpClient } from "@effect/platform"
import { Cause, Clock, Effect, Exit, Fiber, Inspectable, Layer, Redacted, Schema, TestClock, TestContext } from "effect"
import {
  ClinicalClient,
  HttpTransport,
  MedicationService,
  PersonAuthentication,
  PersonData,
  TokenService
} from "effect-clinical"
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
} from "../../spec/driver.js"
import { APPLICATION_ID, BASE_URL, type FakeService } from "../../spec/fakeService.js"
import * as CapturingTracer from "./CapturingTracer.js"
import { middleJitter, runWithClock } from "./FakeService.js"
import { captureLogs } from "./Leaks.js"

/** The fake as this line's in-memory transport, on Effect's clock. */
const transportOf = (fake: FakeService) =>
  HttpTransport.layerMemory((request) =>
    Effect.flatMap(Effect.clockWith((clock) => clock.currentTimeMillis), (now) => {
      const reply = fake.handle({
        method: request.method,
        url: request.url,
        headers: HttpTransport.wireHeaders(request),
        body: HttpTransport.wireBody(request)
      }, now)
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
const NumbersByKey = Schema.Record({ key: Schema.String, value: Schema.Number })

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
      return Effect.flatMap(
        TokenService.get,
        (token) => Effect.log("token", token, "person", Redacted.make(step.personUid))
      )
    case "Advance":
      return TestClock.adjust(step.millis)
    case "RevokeAll":
      return Effect.sync(() => fake.revokeAll())
  }
}

/** Every text a user could print of a failed exit. */
const failureTexts = (exit: Exit.Exit<unknown, unknown>): Array<readonly [string, string]> => {
  if (Exit.isSuccess(exit)) return []
  const texts: Array<readonly [string, string]> = [
    ["cause", Cause.pretty(exit.cause, { renderErrorCause: true })],
    ["cause JSON", JSON.stringify(exit.cause)]
  ]
  for (const error of Cause.failures(exit.cause)) {
    texts.push(["String(error)", String(error)], ["JSON.stringify(error)", JSON.stringify(error)])
    texts.push(["inspect(error)", Inspectable.format(error)], ["error.stack", (error as Error).stack ?? ""])
  }
  return texts
}

/** A failure as plain data: its tag, message and fields. */
const plain = (error: unknown): Failure => {
  const { _tag, message } = error as { readonly _tag: string; readonly message: string }
  return { ...(error as object), _tag, message }
}

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

/** A flow over a network: each step's outcome recorded, every failure's texts and logged cause kept. */
const networkFlow = (steps: ReadonlyArray<NetworkStep>, texts: Array<readonly [string, string]>) => {
  let token: TokenService.AccessToken | undefined
  let authenticated: Redacted.Redacted<string> | undefined
  const forked: Array<Fiber.RuntimeFiber<Outcome>> = []
  const person = (ref: PersonRef): Effect.Effect<string | Redacted.Redacted<string>> =>
    typeof ref === "string"
      ? Effect.succeed(ref)
      : authenticated === undefined
      ? Effect.dieMessage("no Authenticate step before")
      : Effect.succeed(authenticated)
  const outcomeOf = (step: NetworkStep): Effect.Effect<Outcome, never, ClinicalClient.Services> =>
    Effect.exit(valueOf(step)).pipe(Effect.flatMap((exit) => {
      if (Exit.isSuccess(exit)) return Effect.succeed<Outcome>({ _tag: "Success", value: exit.value })
      texts.push(...failureTexts(exit))
      const failure = Cause.failureOption(exit.cause)
      // As an application logs what went wrong: its cause, at error level.
      return Effect.zipRight(
        Effect.logError("call failed", exit.cause),
        failure._tag === "Some"
          ? Effect.succeed<Outcome>({ _tag: "Failure", error: plain(failure.value) })
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
        return Effect.map(TokenService.get, (got) => {
          token = got
          const { expiresAt, generation, issuedAt, lifetimeMillis, serverClockSkewMillis, serverLifetimeMillis } = got
          return { generation, issuedAt, expiresAt, lifetimeMillis, serverLifetimeMillis, serverClockSkewMillis }
        })
      case "InvalidateToken":
        return token === undefined ? Effect.dieMessage("no Token step before") : TokenService.invalidate(token)
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
          Effect.forEach(Array.from({ length: step.count }), () => Effect.fork(outcomeOf(step.step))),
          (fibers) => Effect.sync(() => void forked.push(...fibers))
        )
      case "InterruptForked":
        return Fiber.interruptAll(forked.splice(0))
      case "JoinForked":
        return Fiber.join(Fiber.all(forked.splice(0)))
    }
  }
  return Effect.forEach(steps, outcomeOf)
}

const networked: Networked = {
  transports: [["undici", ["effect path", "common path"]], ["fetch", ["effect path"]]],
  runAt: (baseUrl, transport, path, steps, settings, traced = false) =>
    Effect.runPromise(Effect.gen(function*() {
      const { layer, lines } = captureLogs()
      const { spans, tracer } = yield* CapturingTracer.make
      const texts: Array<readonly [string, string]> = []
      const started = Date.now()
      const flow = Effect.zipRight(path === "common path" ? TokenService.get : Effect.void, networkFlow(steps, texts))
      const exit = yield* flow.pipe(
        Effect.provide(ClinicalClient.layer({ baseUrl, ...settings }).pipe(Layer.provide(transports[transport]()))),
        Effect.tapErrorCause((cause) => Effect.logError("flow failed", cause)),
        Effect.provide(layer),
        traced ? Effect.withTracer(tracer) : (effect) => effect,
        Effect.exit
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
  spans: ReadonlyArray<{ readonly attributes: ReadonlyMap<string, unknown> }>
): ObservedAt => {
  texts.push(...failureTexts(exit))
  const outcomes = Exit.isSuccess(exit) ? exit.value : []
  const failed = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : undefined
  if (Exit.isFailure(exit) && failed?._tag !== "Some") throw new Error(Cause.pretty(exit.cause))
  const failure = failed?._tag === "Some"
    ? plain(failed.value)
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

export const driver: Driver = {
  line: "Effect 3",
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
          Effect.tapErrorCause((cause) => Effect.logError("flow failed", cause)),
          Effect.provide(layer),
          Effect.exit,
          (flow) =>
            clockToEachAnswer
              ? runWithClock(flow, (now) => fake.clockStepMillis(now, 100), 1_000_000)
              : runWithClock(flow),
          middleJitter
        )
        return observedAt(exit, lines, texts, yield* Clock.currentTimeMillis, [])
      }).pipe(Effect.provide(TestContext.TestContext))
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
          Effect.tapErrorCause((cause) => Effect.logError("flow failed", cause)),
          Effect.provide(layer),
          Effect.exit,
          runWithClock
        )
        const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : undefined
        const observed: Observed = {
          logLines: lines,
          failureTag: failure?._tag === "Some" ? (failure.value as { readonly _tag: string })._tag : undefined,
          failureTexts: failureTexts(exit)
        }
        return observed
      }).pipe(Effect.provide(TestContext.TestContext))
    )
}
