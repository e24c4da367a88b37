/**
 * The Effect 4 line as the shared specification drives it (spec/driver.ts): a flow's steps run
 * against a client over the spec's fake service in memory, under TestClock moved a step at a time,
 * every log line captured (logfmt and JSON, every level), every text of a failure a user could
 * print handed back.
 */
import { Cause, Effect, Exit, Fiber, Formatter, Layer, Logger, Redacted, References, Schema } from "effect"
import { TestClock } from "effect/testing"
import type { Driver, Observed, Step } from "../../../spec/driver.js"
import { APPLICATION_ID, BASE_URL, type FakeService } from "../../../spec/fakeService.js"
import * as ClinicalClient from "../../src/ClinicalClient.js"
import * as HttpTransport from "../../src/HttpTransport.js"
import * as MedicationService from "../../src/MedicationService.js"
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
          return Effect.succeed(reply.response)
        case "Fail":
          return Effect.fail(HttpTransport.transportError(request, reply.reason, reply.detail))
        case "Hang":
          return Effect.never
      }
    })
  )

const Named = Schema.Struct({ Name: Schema.String })

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

/** Runs `effect` to its end under TestClock, moving the clock 100 ms at a time (backoffs and timeouts fire). */
const runWithClock = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(effect)
    for (let i = 0; i < 10_000; i++) {
      if (fiber.pollUnsafe() !== undefined) return yield* Fiber.join(fiber)
      yield* TestClock.adjust(100)
    }
    return yield* Effect.die("still running after 10,000 clock steps")
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

export const driver: Driver = {
  line: "Effect 4",
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
