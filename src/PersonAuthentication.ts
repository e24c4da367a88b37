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
import { field, isRecord } from "../core/json.js"
import { ClinicalConfig } from "./ClinicalConfig.js"
import { type ClinicalError, InvalidRequest, ResponseDecodeError } from "./ClinicalError.js"
import { HttpTransport } from "./HttpTransport.js"
import * as AuthorizedPost from "./internal/call/authorizedPost.js"
import { SecretText } from "./internal/call/secretText.js"
import * as validate from "./internal/validate.js"
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

const OPERATION = "authenticate"

/** The furthest timezone is 14 hours ahead of UTC: a person born "today" there is not in the future. */
const FURTHEST_AHEAD_MILLIS = 14 * 60 * 60 * 1000

const refuse = (field: string, reason: string) => new InvalidRequest({ operation: OPERATION, field, reason })

/** The checked credentials: the pass code and the date of birth as written on the wire, and how a server may echo it. */
interface Checked {
  readonly passCode: string
  readonly dateOfBirth: string
  /** The date of birth in the forms a server may echo it in (to scrub them from its text). */
  readonly dateForms: ReadonlyArray<string>
}

const check = (credentials: Credentials, format: string, now: number): Either.Either<Checked, InvalidRequest> => {
  if (typeof credentials !== "object" || credentials === null) {
    return Either.left(refuse("credentials", "must be an object with passCode and dateOfBirth"))
  }
  const passCode = validate.printable(validate.reveal(credentials.passCode), validate.MAX_PASS_CODE_LENGTH)
  if (Either.isLeft(passCode)) return Either.left(refuse("passCode", passCode.left))
  const day = validate.day(validate.reveal(credentials.dateOfBirth), true)
  if (Either.isLeft(day)) return Either.left(refuse("dateOfBirth", day.left))
  const today = new Date(now + FURTHEST_AHEAD_MILLIS)
  const latest = validate.isoDay({
    year: today.getUTCFullYear(),
    month: today.getUTCMonth() + 1,
    day: today.getUTCDate()
  })
  if (validate.isoDay(day.right) > latest) return Either.left(refuse("dateOfBirth", "is in the future"))
  const { day: d, month: m, year: y } = day.right
  return Either.right({
    passCode: passCode.right,
    dateOfBirth: validate.formatDay(day.right, format),
    // As sent, as ISO, and as .NET prints a date (1/1/1945, and 1/1/1945 12:00:00 AM).
    // Stryker disable next-line StringLiteral: equivalent while server text is also scrubbed by shape (every date); kept so the known forms hold without it
    dateForms: [validate.formatDay(day.right, format), validate.isoDay(day.right), `${m}/${d}/${y}`]
  })
}

/** The PersonUid in the answer: `PersonUid` in any letter case, in the envelope or bare. Never echoed. */
const personUidOf = (
  json: unknown,
  status: number,
  url: string
): Either.Either<Redacted.Redacted<string>, ResponseDecodeError> => {
  const decodeError = (status: number, reason: string) =>
    new ResponseDecodeError({ operation: OPERATION, method: "POST", url, status, reason })
  if (!isRecord(json)) return Either.left(decodeError(status, "the body is not a JSON object"))
  const uid = field(json, "PersonUid")
  if (uid === undefined || uid === null) return Either.left(decodeError(status, "the body has no PersonUid"))
  return Either.isRight(validate.visibleAscii(uid, validate.MAX_PERSON_UID_LENGTH))
    ? Either.right(Redacted.make(uid as string))
    : Either.left(
      decodeError(
        status,
        `PersonUid is not a usable identifier (visible ASCII, at most ${validate.MAX_PERSON_UID_LENGTH} characters)`
      )
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
                OPERATION,
                url,
                new SecretText(JSON.stringify({
                  ApplicationId: Redacted.value(config.applicationId),
                  PassCode: checked.passCode,
                  DateOfBirth: checked.dateOfBirth
                })),
                () => [checked.passCode, ...checked.dateForms].map((secret) => Redacted.make(secret)),
                false,
                ({ json, status }) => personUidOf(json, status, url)
              )
            ))
      ).pipe(
        Effect.withSpan("PersonAuthentication.authenticate", {
          attributes: { "clinical.operation": OPERATION },
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
