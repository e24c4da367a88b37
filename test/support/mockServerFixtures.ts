/**
 * What the MockClinicalServer*.test.ts files share: requests to the mock in memory (a token request,
 * a medications request with a token), a mock made for one effect, and a response's JSON body.
 */
import { Effect } from "effect"
import type { HttpTransport } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"

export const APP = MockClinicalServer.demoApplicationId
export const [ELEANOR, MARCUS] = MockClinicalServer.fixturePersons
export const BASE = "http://127.0.0.1:1"

export const post = (
  path: string,
  body: unknown,
  headers: Record<string, string> = {}
): HttpTransport.TransportRequest => ({
  method: "POST",
  url: `${BASE}${path}`,
  headers: { "Content-Type": "application/json", ...headers },
  body: typeof body === "string" ? body : JSON.stringify(body)
})

export const tokenRequest = post("/api/Server/Token", { ApplicationId: APP })

export const withMock = <A, E>(
  body: (mock: MockClinicalServer.Service) => Effect.Effect<A, E>,
  options?: MockClinicalServer.Options
) => Effect.flatMap(MockClinicalServer.make(options), body)

export const json = (response: HttpTransport.TransportResponse) => JSON.parse(response.body)

export const getToken = (mock: MockClinicalServer.Service) =>
  Effect.map(mock.handle(tokenRequest), (response) => json(response).Token as string)

export const medicationRequest = (token: string, body: unknown = { personuid: ELEANOR!.personUid }, app = APP) =>
  post("/api/clinical/medication/get", body, { Authorization: `Bearer ${token}`, ApplicationId: app })
