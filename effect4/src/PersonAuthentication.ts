/**
 * Authenticating a person: the pass code the patient received from their doctor and their date of
 * birth, exchanged for the PersonUid every data call needs. `POST
 * {authenticateUrl}/api/Server/Authenticate`, with the bearer token and the ApplicationId (the
 * checks, the body and the reading of the answer are the core's, core/call/authenticate.ts).
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
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Core from "../../core/call/authenticate.js"
import { Failed } from "../../core/call/response.js"
import { ClinicalConfig } from "./ClinicalConfig.js"
import { type ClinicalError, InvalidRequest } from "./ClinicalError.js"
import { HttpTransport } from "./HttpTransport.js"
import * as AuthorizedPost from "./internal/call/authorizedPost.js"
import { line } from "./internal/line.js"
import { NO_STACK } from "./internal/observability/telemetry.js"
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

/** The authenticate operation. */
export class PersonAuthentication
  extends Context.Service<PersonAuthentication, Service>()("effect-clinical/PersonAuthentication")
{}

/** Builds the authenticate operation over the services it needs. */
export const make: Effect.Effect<Service, never, ClinicalConfig | HttpTransport | TokenService> = Effect.gen(
  function*() {
    const config = yield* ClinicalConfig
    const post = AuthorizedPost.forClient(config, yield* HttpTransport, yield* TokenService, yield* Effect.context())
    const url = `${config.authenticateUrl}${config.authenticatePath}`

    const authenticate = (credentials: Credentials) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const checked = Core.check(credentials, line.reveal, config.dateOfBirthFormat, now)
        if (checked instanceof Core.Refusal) {
          return Effect.fail(
            new InvalidRequest({ operation: Core.OPERATION, field: checked.field, reason: checked.reason })
          )
        }
        return post({
          operation: Core.OPERATION,
          url,
          body: Redacted.make(Core.body(Redacted.value(config.applicationId), checked)),
          secrets: () => [checked.passCode, ...checked.dateForms],
          resendable: false,
          finish: ({ json, status }) => {
            const uid = Core.personUidOf(json)
            return uid.ok
              ? Redacted.make(uid.value)
              : new Failed({
                _tag: "ResponseDecodeError",
                operation: Core.OPERATION,
                method: "POST",
                url,
                status,
                reason: uid.reason
              })
          }
        })
      }).pipe(
        Effect.withSpan(
          "PersonAuthentication.authenticate",
          { attributes: { "clinical.operation": Core.OPERATION } },
          NO_STACK
        )
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
  PersonAuthentication.use((service) => service.authenticate(credentials))
