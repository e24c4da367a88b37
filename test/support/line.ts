/**
 * The Effect 3 line as the shared specification drives it (spec/driver.ts): a flow's steps run
 * against a client over the spec's fake service in memory, under TestClock moved a step at a time,
 * every log line captured, every text of a failure a user could print handed back.
 */
import { Cause, Effect, Exit, Inspectable, Layer, Redacted, Schema, TestClock, TestContext } from "effect"
import { ClinicalClient, HttpTransport, MedicationService, TokenService } from "effect-clinical"
import type { Driver, Observed, Step } from "../../spec/driver.js"
import { APPLICATION_ID, BASE_URL, type FakeService } from "../../spec/fakeService.js"
import { runWithClock } from "./FakeService.js"
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

export const driver: Driver = {
  line: "Effect 3",
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
