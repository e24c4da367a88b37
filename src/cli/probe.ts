/**
 * `effect-clinical probe`: asks a real service the questions its documentation leaves open, read
 * only and in a bounded number of requests (at most {@link MAX_REQUESTS}), and reports what it
 * answered. Sent by hand, without the client's retries and refreshes, so that each answer is the
 * service's own. Every text the server wrote is scrubbed of the secrets the requests carried.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as DiagnosticsChannel from "node:diagnostics_channel"
import * as Tls from "node:tls"
import { isTokenRejected } from "../../core/call/callPolicy.js"
import { field, isRecord, parse } from "../../core/json.js"
import * as ClinicalConfig from "../ClinicalConfig.js"
import type { HttpError } from "../ClinicalError.js"
import * as Transport from "../HttpTransport.js"
import { HttpTransport } from "../HttpTransport.js"
import { send } from "../internal/call/attempt.js"
import { dataHeaders } from "../internal/call/authorizedPost.js"
import { scrub, scrubber } from "../internal/redaction/redaction.js"
import { readTokenResponse, tokenRequest } from "../internal/token/tokenRequest.js"
import * as Proxy from "../internal/transport/proxy.js"
import * as PersonData from "../PersonData.js"
import { withSettings } from "./environment.js"
import * as Render from "./render.js"

/** The most requests a probe makes: two tokens, five data requests. */
export const MAX_REQUESTS = 7

/** A PersonUid no service knows, for asking how an unknown person is answered. */
export const UNKNOWN_PERSON = "effect-clinical-probe-unknown-person"

/** How a data request was answered: the status and the envelope's fields, when there was one. */
export interface Answer {
  readonly status: number
  readonly success: boolean | null
  readonly errorType: string | null
}

/** What a probe found. `null` where it could not tell (and `note` says why). */
export interface Report {
  readonly requests: number
  readonly token: {
    /** The form of `TOKEN_EXPIRES`: `IMF-fixdate`, `RFC 850`, `asctime`, or `missing`. */
    readonly expiresForm: string
    readonly lifetimeSeconds: number
    /** The server's clock minus this machine's; `null` without a `Date` header. */
    readonly serverClockSkewMillis: number | null
  }
  /** Whether issuing a token revoked the one issued before it. */
  readonly newTokenRevokesPrevious: boolean | null
  readonly unknownPerson: Answer
  readonly wrongMethod: { readonly method: "GET"; readonly status: number }
  /** Whether `personuid` binds as `PersonUid` does; `null` without a PersonUid to try. */
  readonly personuidBinds: boolean | null
  /** The medication response's field names (never values); `null` without a PersonUid. */
  readonly medicationFields: {
    readonly answer: Answer
    readonly body: ReadonlyArray<string>
    readonly collection: string | null
    readonly item: ReadonlyArray<string>
  } | null
  /** How the data host was reached: through which proxy, over which TLS, with which certificate. */
  readonly connection: Connection
  readonly notes: ReadonlyArray<string>
}

/** The way to the data host, as the probe's own connection went. */
export interface Connection {
  /** The proxy's origin (never its credentials), or `null` when the connection went direct. */
  readonly proxy: string | null
  /** The TLS of the connection, `null` over plain HTTP. */
  readonly tls: {
    /** `TLSv1.3`, `TLSv1.2`. */
    readonly version: string
    /** The server certificate's issuer, as `CN=..., O=...`. */
    readonly issuer: string
    /** When the server's certificate expires (ISO 8601). */
    readonly expires: string
  } | null
}

/** What a TLS socket says of itself, or `undefined` for a plain one. */
export const tlsOf = (socket: unknown): Connection["tls"] | undefined => {
  if (!(socket instanceof Tls.TLSSocket)) return undefined
  const certificate = socket.getPeerCertificate()
  const issuer = Object.entries(certificate.issuer ?? {}).map(([name, value]) => `${name}=${String(value)}`)
  const expires = new Date(certificate.valid_to)
  return {
    version: socket.getProtocol() ?? "unknown",
    issuer: issuer.join(", ") || "unknown",
    expires: Number.isNaN(expires.getTime()) ? "unknown" : expires.toISOString()
  }
}

/**
 * Runs `effect` while recording the TLS of each connection undici makes (its diagnostics channel),
 * by origin (`https://host:port`): the connection is the transport's own, through the proxy or not.
 * Not by host name: a proxy on the service's host (`localhost`) connects first, in plain HTTP, and
 * would stand for the service's connection.
 */
const recordingConnections = <A, E, R>(
  effect: (tlsByOrigin: ReadonlyMap<string, Connection["tls"]>) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => {
  const tlsByOrigin = new Map<string, Connection["tls"]>()
  const onConnected = (message: unknown) => {
    const { connectParams, socket } = message as {
      connectParams?: { protocol?: unknown; host?: unknown }
      socket?: unknown
    }
    const origin = `${String(connectParams?.protocol)}//${String(connectParams?.host)}`
    if (!tlsByOrigin.has(origin)) tlsByOrigin.set(origin, tlsOf(socket) ?? null)
  }
  return Effect.acquireUseRelease(
    Effect.sync(() => DiagnosticsChannel.subscribe(CONNECTED, onConnected)),
    () => effect(tlsByOrigin),
    () => Effect.sync(() => DiagnosticsChannel.unsubscribe(CONNECTED, onConnected))
  )
}

const CONNECTED = "undici:client:connected"

/** The proxy a request to `url` goes through under the client's settings, by origin; `null` for none. */
const proxyOf = (config: ClinicalConfig.Service, url: string): string | null => {
  const routes = Proxy.routesOf(config.proxy, config.noProxy, process.env)
  return Either.isLeft(routes) ? null : Proxy.proxyFor(routes.right, new URL(url))?.origin ?? null
}

const IMF_FIXDATE = /^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/
const RFC_850 = /^[A-Za-z]+, \d{2}-[A-Za-z]{3}-\d{2} \d{2}:\d{2}:\d{2} GMT$/
const ASCTIME = /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/

/** The form of an HTTP date header (the three forms RFC 9110 names). */
export const dateForm = (header: string | undefined): string =>
  header === undefined
    ? "missing"
    : IMF_FIXDATE.test(header)
    ? "IMF-fixdate"
    : RFC_850.test(header)
    ? "RFC 850"
    : ASCTIME.test(header)
    ? "asctime"
    : "other"

/** The status and envelope of an answer; server text scrubbed of `secrets`. */
export const answerOf = (
  response: Transport.TransportResponse,
  secrets: ReadonlyArray<Redacted.Redacted<string>>
): Answer => {
  const json = parse(response.body)
  const body = json !== undefined && isRecord(json.value) ? json.value : undefined
  const success = body === undefined ? undefined : field(body, "Success")
  const errorType = body === undefined ? undefined : field(body, "ErrorType")
  return {
    status: response.status,
    success: typeof success === "boolean" ? success : null,
    errorType: typeof errorType === "string" ? scrub(errorType, secrets) : null
  }
}

/** The field names of a medication answer: the body's, the collection's, and its items' (in first-seen order). */
export const fieldNamesOf = (
  body: unknown,
  secrets: ReadonlyArray<Redacted.Redacted<string>>
): {
  readonly body: ReadonlyArray<string>
  readonly collection: string | null
  readonly item: ReadonlyArray<string>
} => {
  if (!isRecord(body)) return { body: [], collection: null, item: [] }
  const names = Object.keys(body)
  const collection = names.find((name) => Array.isArray(body[name]) && /medication/i.test(name)) ??
    names.find((name) => Array.isArray(body[name])) ?? null
  const item = new Set<string>()
  if (collection !== null) {
    for (const element of body[collection] as ReadonlyArray<unknown>) {
      if (isRecord(element)) { for (const name of Object.keys(element)) item.add(name) }
    }
  }
  const clean = scrubber(secrets)
  return {
    body: names.map((name) => clean(name)),
    collection: collection === null ? null : clean(collection),
    item: [...item].map((name) => clean(name))
  }
}

/** Runs the probe. A refused token request fails it with the token's typed error. */
export const run = (
  personUid: Redacted.Redacted<string> | undefined
): Effect.Effect<Report, HttpError, ClinicalConfig.ClinicalConfig | HttpTransport> =>
  recordingConnections((tlsByOrigin) => questions(personUid, tlsByOrigin))

const questions = (
  personUid: Redacted.Redacted<string> | undefined,
  tlsByOrigin: ReadonlyMap<string, Connection["tls"]>
): Effect.Effect<Report, HttpError, ClinicalConfig.ClinicalConfig | HttpTransport> =>
  Effect.gen(function*() {
    const config = yield* ClinicalConfig.ClinicalConfig
    const transport = yield* HttpTransport
    let requests = 0
    const notes: Array<string> = []

    const obtainToken = Effect.gen(function*() {
      const sentAt = yield* Clock.currentTimeMillis
      requests++
      const response = yield* send(transport, tokenRequest(config), "token", [config.applicationId])
      const receivedAt = yield* Clock.currentTimeMillis
      const issued = yield* Either.match(readTokenResponse(response, sentAt, receivedAt, config), {
        onLeft: Effect.fail,
        onRight: Effect.succeed
      })
      const header = response.headers["token_expires"] ?? response.headers["token-expires"]
      return { issued, form: dateForm(header) }
    })

    const url = `${config.baseUrl}${PersonData.medications.path}`
    const dataRequest = (
      method: "POST" | "GET",
      token: Redacted.Redacted<string>,
      body: Record<string, string> | undefined
    ) => {
      requests++
      const request: Transport.TransportRequest = {
        method,
        url,
        headers: dataHeaders(config, Redacted.make(`Bearer ${Redacted.value(token)}`)),
        ...(body === undefined ? {} : { body: Redacted.make(JSON.stringify(body)) }),
        maxResponseBytes: config.maxResponseBytes,
        timeoutMillis: Duration.toMillis(config.requestTimeout)
      }
      const secrets = [token, config.applicationId, ...(personUid === undefined ? [] : [personUid])]
      return Effect.map(send(transport, request, "medications", secrets), (response) => ({ response, secrets }))
    }

    const first = yield* obtainToken
    const second = yield* obtainToken
    const unknownWithFirst = yield* dataRequest("POST", first.issued.token, { PersonUid: UNKNOWN_PERSON })
    const firstRefused = isTokenRejected(unknownWithFirst.response.status)
    const unknown = firstRefused
      ? yield* dataRequest("POST", second.issued.token, { PersonUid: UNKNOWN_PERSON })
      : unknownWithFirst
    const unknownAnswer = answerOf(unknown.response, unknown.secrets)
    const newTokenRevokesPrevious = !firstRefused
      ? false
      : isTokenRejected(unknownAnswer.status)
      ? null
      : true
    if (newTokenRevokesPrevious === null) {
      notes.push("the data host refused both tokens: check the ApplicationId and the hosts")
    }

    const wrongMethod = yield* dataRequest("GET", second.issued.token, undefined)

    let personuidBinds: boolean | null = null
    let medicationFields: Report["medicationFields"] = null
    if (personUid === undefined) {
      notes.push("give a PersonUid to learn whether personuid binds and the medication response's field names")
    } else {
      const pascal = yield* dataRequest("POST", second.issued.token, { PersonUid: Redacted.value(personUid) })
      const lower = yield* dataRequest("POST", second.issued.token, { personuid: Redacted.value(personUid) })
      const pascalAnswer = answerOf(pascal.response, pascal.secrets)
      const lowerAnswer = answerOf(lower.response, lower.secrets)
      const parsed = parse(pascal.response.body)
      medicationFields = {
        answer: pascalAnswer,
        ...fieldNamesOf(parsed?.value, pascal.secrets)
      }
      if (pascalAnswer.status === 200 && pascalAnswer.success !== false) {
        personuidBinds = lowerAnswer.status === 200 && lowerAnswer.success !== false
      } else {
        notes.push("the PersonUid given was not answered with data, so binding could not be compared")
      }
    }

    return {
      requests,
      token: {
        expiresForm: first.form,
        lifetimeSeconds: first.issued.serverLifetimeMillis / 1000,
        serverClockSkewMillis: first.issued.serverClockSkewMillis ?? null
      },
      newTokenRevokesPrevious,
      unknownPerson: unknownAnswer,
      wrongMethod: { method: "GET", status: wrongMethod.response.status },
      personuidBinds,
      medicationFields,
      connection: { proxy: proxyOf(config, url), tls: tlsByOrigin.get(new URL(url).origin) ?? null },
      notes
    } satisfies Report
  })

const yesNo = (value: boolean | null): string => (value === null ? "unknown" : value ? "yes" : "no")

const answerText = (answer: Answer): string =>
  `HTTP ${answer.status}${answer.success === null ? "" : `, Success: ${answer.success}`}${
    answer.errorType === null ? "" : `, ErrorType: ${answer.errorType}`
  }`

/** The report as a table for people. */
export const render = (report: Report): string => {
  const skew = report.token.serverClockSkewMillis
  const rows: Array<readonly [string, string]> = [
    ["TOKEN_EXPIRES form", report.token.expiresForm],
    ["token lifetime", Render.duration(report.token.lifetimeSeconds * 1000)],
    ["server clock", skew === null ? "unknown (no Date header)" : `${skew >= 0 ? "+" : ""}${Render.duration(skew)}`],
    ["a new token revokes the previous one", yesNo(report.newTokenRevokesPrevious)],
    ["an unknown person is answered", answerText(report.unknownPerson)],
    ["a GET is answered", `HTTP ${report.wrongMethod.status}`],
    ["personuid binds like PersonUid", yesNo(report.personuidBinds)]
  ]
  const fieldsOf = report.medicationFields
  if (fieldsOf !== null) {
    rows.push(["medications answered", answerText(fieldsOf.answer)])
    rows.push(["medication body fields", fieldsOf.body.join(", ") || "(none)"])
    rows.push(["medication collection", fieldsOf.collection ?? "(none found)"])
    rows.push(["medication item fields", fieldsOf.item.join(", ") || "(no items)"])
  }
  const { proxy, tls } = report.connection
  rows.push(["proxy", proxy ?? "none"])
  rows.push(["TLS", tls === null ? "none (plain HTTP)" : tls.version])
  if (tls !== null) {
    rows.push(["server certificate issuer", tls.issuer])
    rows.push(["server certificate expires", tls.expires])
  }
  rows.push(["requests made", String(report.requests)])
  return [Render.fields(rows), ...report.notes.map((note) => `note: ${note}`)].join("\n")
}

/** The settings and the transport a probe needs (no token cache: it asks for its tokens itself). */
export const layer = (settingsFile: Option.Option<string>) =>
  withSettings(settingsFile, Transport.layerUndiciFromConfig().pipe(Layer.provideMerge(ClinicalConfig.layerConfig)))
