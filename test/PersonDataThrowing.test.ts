/**
 * Code of the caller's that throws on a person-data call's common path (a Schema, a tracer): the call
 * dies, never hangs, and gives its turn back.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema, Tracer } from "effect"
import { ClinicalClient, ClinicalError, PersonData } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import * as CapturingTracer from "./support/CapturingTracer.js"

describe("code of the caller's that throws on the common path: the call dies, never hangs, its turn given back", () => {
  const boom = new Error("boom")
  const Throwing = Schema.transform(Schema.Unknown, Schema.Unknown, {
    decode: () => {
      throw boom
    },
    encode: (value) => value
  })
  const person = MockClinicalServer.fixturePersons[0]!.personUid

  /** A tracer that throws from `where` for client (HTTP attempt) spans while `armed()`. */
  const throwingTracer = (where: "span" | "end", armed: () => boolean) =>
    Effect.map(CapturingTracer.make, ({ tracer }) =>
      Tracer.make({
        span: (name, parent, context, links, startTime, kind, options) => {
          if (where === "span" && kind === "client" && armed()) throw boom
          const span = tracer.span(name, parent, context, links, startTime, kind, options)
          if (where === "end" && kind === "client") {
            const end = span.end.bind(span)
            return Object.assign(span, {
              end: (...args: Parameters<typeof end>) => {
                if (armed()) throw boom
                end(...args)
              }
            })
          }
          return span
        },
        context: tracer.context
      }))

  /** Runs `body` against a loopback mock over undici, one request at a time, each call bounded by 5 s. */
  const overUndici = <A>(body: Effect.Effect<A, ClinicalError.ClinicalError, ClinicalClient.Services>) =>
    Effect.gen(function*() {
      const mock = yield* Effect.acquireRelease(
        Effect.promise(() => MockClinicalServer.start()),
        (started) => Effect.promise(() => started.close())
      )
      return yield* body.pipe(
        Effect.provide(
          ClinicalClient.layerUndici({ baseUrl: mock.url, applicationId: mock.applicationId, maxConcurrentRequests: 1 })
        ),
        Effect.timeout("5 seconds"),
        Effect.orDie
      )
    }).pipe(Effect.scoped)

  it.live(
    "a Schema that throws, whether the token was cached (the common path) or not; then a call that decodes",
    () =>
      overUndici(Effect.gen(function*() {
        for (let call = 0; call < 3; call++) {
          const exit = yield* Effect.exit(PersonData.getAs(PersonData.medications, Throwing, person))
          expect(exit).toMatchObject({ _tag: "Failure", cause: { _tag: "Die", defect: boom } })
        }
        // The one turn was given back each time.
        const { items } = yield* PersonData.getAs(PersonData.medications, Schema.Unknown, person)
        expect(items).toEqual(MockClinicalServer.fixturePersons[0]!.medications)
      })),
    { timeout: 20_000 }
  )

  it.live(
    "a tracer whose attempt span throws when it ends, or when it is made; then calls with it well again",
    () =>
      Effect.gen(function*() {
        for (const where of ["end", "span"] as const) {
          let armed = false
          const tracer = yield* throwingTracer(where, () => armed)
          yield* overUndici(
            Effect.gen(function*() {
              yield* PersonData.get(PersonData.medications, person) // the token cached: the common path next
              armed = true
              const exit = yield* Effect.exit(PersonData.get(PersonData.medications, person))
              expect(exit, where).toMatchObject({ _tag: "Failure", cause: { _tag: "Die", defect: boom } })
              armed = false
              const { items } = yield* PersonData.get(PersonData.medications, person)
              expect(items, where).toEqual(MockClinicalServer.fixturePersons[0]!.medications)
            }).pipe(Effect.withTracer(tracer))
          )
        }
      }),
    { timeout: 30_000 }
  )

  it.live(
    "a queued call whose span throws when its turn comes: it dies, and the call that gave the turn ends well",
    () =>
      Effect.gen(function*() {
        let calls = 0
        // The second attempt span made after the warm-up throws: the queued call's.
        const tracer = yield* throwingTracer("span", () => calls > 0 && ++calls === 3)
        yield* overUndici(
          Effect.gen(function*() {
            yield* PersonData.get(PersonData.medications, person)
            calls = 1
            const [holder, queued] = yield* Effect.all([
              Effect.exit(PersonData.get(PersonData.medications, person)),
              Effect.exit(PersonData.get(PersonData.medications, person))
            ], { concurrency: 2 })
            expect(holder).toMatchObject({ _tag: "Success" })
            expect(queued).toMatchObject({ _tag: "Failure", cause: { _tag: "Die", defect: boom } })
          }).pipe(Effect.withTracer(tracer))
        )
      }),
    { timeout: 20_000 }
  )
})
