/**
 * JavaScript callers and JSON configuration can pass anything at all: every public entry point
 * refuses a bad argument with a typed error (`InvalidConfig` for a layer, `InvalidRequest` for a
 * call) that names it, and sends nothing. Never a `TypeError`, never a defect.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option, Redacted, type Schema } from "effect"
import {
  ClinicalClient,
  HttpDate,
  HttpTransport,
  MedicationService,
  PersonAuthentication,
  TokenService
} from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Fake from "./support/FakeService.js"

/** The typed failure of an exit; fails the test on a success or a defect. */
const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure, got a success")
  return Option.getOrThrowWith(Cause.failureOption(exit.cause), () => new Error(Cause.pretty(exit.cause)))
}

const anything = (value: unknown) => value as never

describe("bad arguments are typed errors", () => {
  for (const [label, options] of [["undefined", undefined], ["null", null], ["a string", "x"], ["a number", 42]]) {
    it.effect(`ClinicalClient.layer(${label}) fails with InvalidConfig`, () =>
      Effect.gen(function*() {
        const fake = yield* Fake.make()
        const exit = yield* Effect.exit(
          TokenService.get.pipe(Effect.provide(ClinicalClient.layer(anything(options)).pipe(Layer.provide(fake.layer))))
        )
        expect(failureOf(exit)).toMatchObject({ _tag: "InvalidConfig", setting: "options" })
        expect(yield* fake.requests).toHaveLength(0)
      }))
  }

  it.effect("ClinicalClient.layerUndici(undefined) and HttpTransport.layerUndici(null) fail with InvalidConfig", () =>
    Effect.gen(function*() {
      const client = yield* Effect.exit(
        Effect.provide(TokenService.get, ClinicalClient.layerUndici(anything(undefined)))
      )
      expect(failureOf(client)).toMatchObject({ _tag: "InvalidConfig", setting: "options" })
      const agent = yield* Effect.exit(
        Effect.provide(HttpTransport.HttpTransport, HttpTransport.layerUndici(anything(null)))
      )
      expect(failureOf(agent)).toMatchObject({ _tag: "InvalidConfig", setting: "agentOptions" })
    }))

  it.effect("HttpTransport.layerMemory without a handler fails with InvalidConfig", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        Effect.provide(HttpTransport.HttpTransport, HttpTransport.layerMemory(anything(5)))
      )
      expect(failureOf(exit)).toMatchObject({ _tag: "InvalidConfig", setting: "handler" })
    }))

  it.effect("MockClinicalServer.make refuses options that are not what it reads", () =>
    Effect.gen(function*() {
      for (
        const [options, setting] of [
          [null, "options"],
          [{ persons: "everyone" }, "persons"],
          [{ applicationIds: [1] }, "applicationIds"],
          [{ requestLogLimit: -1 }, "requestLogLimit"]
        ] as const
      ) {
        const exit = yield* Effect.exit(MockClinicalServer.make(anything(options)))
        expect(failureOf(exit)).toMatchObject({ _tag: "InvalidConfig", setting })
      }
    }))

  it.effect("MedicationService calls refuse a bad PersonUid, options or Schema with InvalidRequest, sending nothing", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const calls: ReadonlyArray<
          readonly [Effect.Effect<unknown, unknown, MedicationService.MedicationService>, string]
        > = [
          [MedicationService.get(anything(undefined)), "personUid"],
          [MedicationService.get(anything(12345)), "personUid"],
          // Looks like a Redacted, holds nothing: Redacted.value would throw.
          [MedicationService.get(Object.create(Object.getPrototypeOf(Redacted.make("x")))), "personUid"],
          [MedicationService.get(Fake.PERSON_UID, anything("2024-01-01")), "options"],
          [MedicationService.get(Fake.PERSON_UID, anything({ startDate: 20240101 })), "startDate"],
          [MedicationService.getAs(anything(undefined), Fake.PERSON_UID), "schema"],
          [MedicationService.getAs(anything({ fields: {} }) as Schema.Schema<unknown>, Fake.PERSON_UID), "schema"]
        ]
        for (const [call, field] of calls) {
          expect(failureOf(yield* Effect.exit(call))).toMatchObject({ _tag: "InvalidRequest", field })
        }
        expect(yield* fake.requests).toHaveLength(0)
        // null options mean none: the call is made.
        expect((yield* MedicationService.get(Fake.PERSON_UID, anything(null))).medications).toHaveLength(2)
      })
    ))

  // Looks like a Redacted, holds nothing: Redacted.value would throw.
  const emptyRedacted = () => Object.create(Object.getPrototypeOf(Redacted.make("x")))

  it.effect("an ApplicationId that only looks like a Redacted fails the layer with InvalidConfig", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const layer = ClinicalClient.layer({ baseUrl: "https://clinical.test", applicationId: emptyRedacted() })
      const exit = yield* Effect.exit(TokenService.get.pipe(Effect.provide(layer.pipe(Layer.provide(fake.layer)))))
      expect(failureOf(exit)).toMatchObject({ _tag: "InvalidConfig", setting: "applicationId" })
      expect(yield* fake.requests).toHaveLength(0)
    }))

  it.effect("authenticate refuses a pass code or date of birth that only looks like a Redacted, sending nothing", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        for (
          const [credentials, field] of [
            [{ passCode: emptyRedacted(), dateOfBirth: "03/14/1945" }, "passCode"],
            [{ passCode: "EW-2719-KQ", dateOfBirth: emptyRedacted() }, "dateOfBirth"]
          ] as const
        ) {
          const exit = yield* Effect.exit(PersonAuthentication.authenticate(credentials))
          expect(failureOf(exit)).toMatchObject({ _tag: "InvalidRequest", field })
        }
        expect(yield* fake.requests).toHaveLength(0)
      })
    ))

  it.effect("TokenService.getWithin refuses what is not a duration; invalidate ignores what is not a token", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        for (const maxWait of ["soon", Number.NaN, {}, undefined]) {
          expect(failureOf(yield* Effect.exit(TokenService.getWithin(anything(maxWait))))).toMatchObject({
            _tag: "InvalidRequest",
            field: "maxWait"
          })
        }
        const token = yield* TokenService.get
        for (const notAToken of [undefined, null, {}, "token"]) yield* TokenService.invalidate(anything(notAToken))
        expect((yield* TokenService.get).generation).toBe(token.generation)
        expect(yield* fake.tokenRequests).toHaveLength(1)
      })
    ))

  it("HttpTransport.make / memory / fromHttpClient refuse what is not a function or a client, with InvalidConfig", () => {
    for (const build of [() => HttpTransport.make(anything(5)), () => HttpTransport.memory(anything(undefined))]) {
      expect(build).toThrow(expect.objectContaining({ _tag: "InvalidConfig", setting: "send" }))
    }
    expect(() => HttpTransport.fromHttpClient(anything(undefined))).toThrow(
      expect.objectContaining({ _tag: "InvalidConfig", setting: "client" })
    )
  })

  it.effect("a handler that returns a Promise, not an Effect, is a TransportError, not a defect", () =>
    Effect.gen(function*() {
      const transport = HttpTransport.memory(anything(async () => ({ status: 200, headers: {}, body: "" })))
      const error = yield* Effect.flip(transport.send({ method: "POST", url: "https://x.org/", headers: {} }))
      expect(error).toMatchObject({ _tag: "TransportError", detail: "the transport's send did not return an Effect" })
    }))

  it("HttpDate.format refuses what is not a Date or a number with the documented RangeError", () => {
    expect(() => HttpDate.format(anything("x"))).toThrow(RangeError)
  })

  it.effect("TokenService.getWithin refuses a negative wait", () =>
    Fake.withClient(() =>
      Effect.gen(function*() {
        for (const maxWait of [-5, "-5 seconds"]) {
          expect(failureOf(yield* Effect.exit(TokenService.getWithin(anything(maxWait))))).toMatchObject({
            _tag: "InvalidRequest",
            field: "maxWait"
          })
        }
      })
    ))

  it.effect("the mock refuses faults that are not faults", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.make()
      for (
        const faults of [null, [{ _tag: "Explode" }], [MockClinicalServer.Fault.delay(anything("x"))], [
          MockClinicalServer.Fault.status(99)
        ]]
      ) {
        expect(failureOf(yield* Effect.exit(mock.injectFaults("medications", anything(faults))))).toMatchObject({
          _tag: "InvalidConfig",
          setting: "faults"
        })
      }
    }))
})
