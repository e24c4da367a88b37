/** core/token/tokenResponse: a token endpoint's answer read into a token, or the typed error it stands for. */
import { describe, expect, it } from "vitest"
import { Failed } from "../core/call/response.js"
import { readTokenResponse, type TokenExchange } from "../core/token/tokenResponse.js"

const APPLICATION_ID = "5e0c2b8a-9d7f-4c1e-a3b6-0f2d4e6a8c10"
const URL = "https://auth.example/api/Server/Token"
const NOW = Date.UTC(2026, 10, 27, 12)

const exchange = (at = NOW, applicationId = APPLICATION_ID): TokenExchange => ({
  url: URL,
  applicationId: () => applicationId,
  sentAt: at,
  receivedAt: at,
  maxRetryAfterMillis: 60_000,
  maxTokenLifetimeMillis: 24 * 3_600_000
})

const answer = (body: unknown, headers: Record<string, string>, status = 200) => ({
  status,
  headers,
  body: typeof body === "string" ? body : JSON.stringify(body),
  invalidUtf8: false
})

const inAnHour = (at = NOW) => ({
  token_expires: new Date(at + 3_600_000).toUTCString(),
  date: new Date(at).toUTCString()
})

const read = (received: ReturnType<typeof answer>, at = NOW) => readTokenResponse(received, exchange(at), (t) => t)

const errorOf = (out: ReturnType<typeof read>) => {
  if (!(out instanceof Failed)) throw new Error("expected a failure")
  return out.error
}

describe("readTokenResponse", () => {
  it("a Token that is no string is of the wrong type; a token error names the POST to the token URL", () => {
    expect(errorOf(read(answer({ Token: 42, TokenType: "Bearer" }, inAnHour())))).toEqual({
      _tag: "ResponseDecodeError",
      operation: "token",
      method: "POST",
      url: URL,
      status: 200,
      reason: "body.Token has the wrong type"
    })
    expect(errorOf(read(answer({ Token: "abc", TokenType: "MAC" }, inAnHour()))))
      .toMatchObject({ reason: "body.TokenType has a value that is not allowed" })
  })

  it("the ApplicationId a refusal echoes is scrubbed out of the error, one with no secret's shape too", () => {
    // A GUID is scrubbed by its shape alone; "clinic-app-7" only because it is the ApplicationId.
    for (const applicationId of [APPLICATION_ID, "clinic-app-7"]) {
      const error = errorOf(
        readTokenResponse(
          answer({ Success: false, ErrorMessage: `unknown application ${applicationId}` }, {}, 400),
          exchange(NOW, applicationId),
          (t) => t
        )
      )
      expect(JSON.stringify(error)).not.toContain(applicationId)
      expect(JSON.stringify(error)).toContain("unknown application <redacted>")
    }
  })

  it("two-digit years (RFC 850 dates) are read relative to when the answer came, not to this machine's clock", () => {
    // In 2090, "90" is 2090; read against today's clock it would be 1990.
    const at = Date.UTC(2090, 5, 1)
    const out = read(
      answer({ Token: "abc", TokenType: "Bearer" }, {
        token_expires: "Thursday, 01-Jun-90 01:00:00 GMT",
        date: "Thursday, 01-Jun-90 00:00:00 GMT"
      }),
      at
    )
    expect(out).toMatchObject({ lifetimeMillis: 3_600_000, serverLifetimeMillis: 3_600_000, serverClockSkewMillis: 0 })
  })
})
