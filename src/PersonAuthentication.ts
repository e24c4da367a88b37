/**
 * Authenticating a person: the pass code the patient received from their doctor and their date of
 * birth, exchanged for the PersonUid every data call needs. `POST
 * {authenticateUrl}/api/Server/Authenticate`, with the bearer token and the ApplicationId.
 *
 * The pass code, the date of birth and the PersonUid are secrets: `Redacted` from entry to the
 * wire, scrubbed from every error, in no log line, span or metric. A pass code may be single-use,
 * so once the request may have reached the server it is never sent again (no retry on a timeout, a
 * reset or a 5xx); it is sent again only where the server surely did not act: a refused connection,
 * and a 401/419 (the token is refreshed once and the request sent once more).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Core from "../core/call/authenticate.js"
import { ClinicalConfig } from "./ClinicalConfig.js"
import { type ClinicalError, InvalidRequest, ResponseDecodeError } from "./ClinicalError.js"
import { HttpTransport } from "./HttpTransport.js"
import * as AuthorizedPost from "./internal/call/authorizedPost.js"
import { SecretText } from "./internal/call/secretText.js"
import { reveal } from "./internal/validate.js"
import { TokenService } from "./TokenService.js"

/** What a person proves who they are with. */
export interface Credentials {
  /** What the patient received from their doctor: printable, at most 256 characters. Pass it `Redacted` where you can. */
  readonly passCode: string | Redacted.Redacted<string>
  /** A `Date` (its UTC calendar day), `YYYY-MM-DD` or `MM/DD/YYYY`; a real day, not in the future. */
  readonly dateOfBirth: Date | string | Redacted.Redacted<string>
}

/** The authenticate operation. */
export interface Service {
  /** The person's PersonUid, `Redacted`. Store it: every data call needs it. */
  readonly authenticate: (credentials: Credentials) => Effect.Effect<Redacted.Redacted<string>, ClinicalError>
}

/** The tag of the authenticate operation. */
export class PersonAuthentication
  extends Context.Tag("effect-clinical/PersonAuthentication")<PersonAuthentication, Service>()
{}

/** The credentials checked (the core's rules: core/call/authenticate.ts), a refusal an `InvalidRequest`. */
const check = (
  credentials: Credentials,
  format: string,
  now: number
): Either.Either<Core.CheckedCredentials, InvalidRequest> => {
  const checked = Core.check(credentials, reveal, format, now)
  return checked instanceof Core.Refusal
    ? Either.left(new InvalidRequest({ operation: Core.OPERATION, field: checked.field, reason: checked.reason }))
    : Either.right(checked)
}

/** The PersonUid in the answer (the core's `personUidOf`), `Redacted`. Never echoed. */
const personUidOf = (
  json: unknown,
  status: number,
  url: string
): Either.Either<Redacted.Redacted<string>, ResponseDecodeError> => {
  const uid = Core.personUidOf(json)
  return uid.ok
    ? Either.right(Redacted.make(uid.value))
    : Either.left(
      new ResponseDecodeError({ operation: Core.OPERATION, method: "POST", url, status, reason: uid.reason })
    )
}

/** Builds the authenticate operation over the services it needs. */
export const make: Effect.Effect<Service, never, ClinicalConfig | HttpTransport | TokenService> = Effect.gen(
  function*() {
    const config = yield* ClinicalConfig
    const post = AuthorizedPost.forClient(config, yield* HttpTransport, yield* TokenService)
    const url = `${config.authenticateUrl}${config.authenticatePath}`

    const authenticate = (credentials: Credentials) =>
      Effect.flatMap(
        Clock.currentTimeMillis,
        (now) =>
          Effect.flatMap(check(credentials, config.dateOfBirthFormat, now), (checked) =>
            post(
              new AuthorizedPost.Call(
                Core.OPERATION,
                url,
                new SecretText(Core.body(Redacted.value(config.applicationId), checked)),
                () => [checked.passCode, ...checked.dateForms].map((secret) => Redacted.make(secret)),
                false,
                ({ json, status }) => personUidOf(json, status, url)
              )
            ))
      ).pipe(
        Effect.withSpan("PersonAuthentication.authenticate", {
          attributes: { "clinical.operation": Core.OPERATION },
          // Stryker disable next-line BooleanLiteral: equivalent, a span's captured stack is seen by no exporter here
          captureStackTrace: false
        })
      )

    return PersonAuthentication.of({ authenticate })
  }
)

/** The authenticate operation, over the services the application provides. */
export const layer: Layer.Layer<PersonAuthentication, never, ClinicalConfig | HttpTransport | TokenService> = Layer
  .effect(PersonAuthentication, make)

/** The person's PersonUid, `Redacted`, from the `PersonAuthentication` in context. */
export const authenticate = (
  credentials: Credentials
): Effect.Effect<Redacted.Redacted<string>, ClinicalError, PersonAuthentication> =>
  Effect.flatMap(PersonAuthentication, (service) => service.authenticate(credentials))
