/**
 * The token, the ApplicationId and the PersonUid never appear in a log line, an error's message or
 * JSON, a failure's cause: checked on real captured output of every flow, for any Effect line (see
 * `Driver`), whatever the server echoes and in whatever form (spec/secretForms.ts).
 */
import type { Driver, Observed, Runner, Step } from "./driver.js"
import {
  APPLICATION_ID,
  failWith,
  FakeService,
  headerOf,
  PERSON_UID,
  respond,
  type Responder,
  tokenValue,
  type WireRequest
} from "./fakeService.js"
import { everyForm, FORMS, leakIn } from "./secretForms.js"

const SECRETS: ReadonlyArray<string> = [
  APPLICATION_ID,
  PERSON_UID,
  ...Array.from({ length: 20 }, (_, i) => tokenValue(i + 1))
]

/** A flow: what the fake is told first, then the steps. */
type Flow = readonly [name: string, prepare: (fake: FakeService) => void, steps: ReadonlyArray<Step>]

const get: Step = { _tag: "Medications", personUid: PERSON_UID }

/**
 * What a server echoing the whole request writes: its body and headers, and each secret alone, in
 * every form (percent-encoded twice, HTML-escaped, JSON inside JSON, base64, ...).
 */
const echo = (request: WireRequest) => {
  const body = request.body ?? ""
  const parsed = JSON.parse(body) as Record<string, string>
  return everyForm([body, JSON.stringify(request.headers), ...Object.values(request.headers), ...Object.values(parsed)])
}

/** `count` replies of `responder`: every attempt of a call gets it, so the call ends in it. */
const times = (count: number, responder: Responder) => Array.from({ length: count }, () => responder)

const nothing = () => {}

const flows: ReadonlyArray<Flow> = [
  ["success, with the user logging the token and the result", nothing, [
    { _tag: "LogToken", personUid: PERSON_UID },
    { _tag: "Medications", personUid: PERSON_UID, redacted: true, startDate: "2024-01-01" }
  ]],
  ["401 then success", (fake) => fake.scriptData(respond(401, {})), [get]],
  ["401 twice", (fake) => fake.scriptData(respond(401, {}), respond(401, {})), [get]],
  ["419 twice", (fake) => fake.scriptData(respond(419, {}), respond(419, {})), [get]],
  ["revoked tokens", nothing, [get, { _tag: "RevokeAll" }, get]],
  ["soft and hard window refreshes", nothing, [
    get,
    { _tag: "Advance", millis: 57 * 60_000 },
    get,
    { _tag: "Advance", millis: 3 * 60 * 60_000 },
    get
  ]],
  [
    "Success: false echoing every secret",
    (fake) =>
      fake.scriptData((request) =>
        respond(200, { Success: false, ErrorType: echo(request), ErrorMessage: echo(request) })(request)
      ),
    [get]
  ],
  ...[400, 404, 405, 429, 500, 503].map((status): Flow => [
    `data HTTP ${status} echoing every secret`,
    (fake) => fake.scriptData((request) => respond(status, { Message: echo(request) })(request)),
    [get]
  ]),
  ...[400, 401, 429, 500].map((status): Flow => [
    `token HTTP ${status} echoing every secret`,
    (fake) => fake.scriptToken((request) => respond(status, { Message: echo(request) })(request)),
    [get]
  ]),
  [
    "a data body that is not JSON but echoes every secret",
    (fake) =>
      fake.scriptData((request) => ({ _tag: "Respond", response: { status: 200, headers: {}, body: echo(request) } })),
    [get]
  ],
  [
    "a data body of the wrong shape holding every secret",
    (fake) => fake.scriptData((request) => respond(200, { Medications: echo(request), Success: true })(request)),
    [get]
  ],
  [
    "a caller's Schema refusing items that hold every secret",
    (fake) => fake.scriptData((request) => respond(200, { Medications: [{ Name: 1, Note: echo(request) }] })(request)),
    [{
      _tag: "MedicationsAs",
      personUid: PERSON_UID
    }]
  ],
  [
    "a token of the wrong type echoing the ApplicationId",
    (fake) => fake.scriptToken((request) => respond(200, { Token: echo(request), TokenType: tokenValue(3) })(request)),
    [get]
  ],
  [
    "a transport failure whose detail holds every secret",
    (fake) => fake.scriptData((request) => failWith(echo(request))),
    [get]
  ],
  [
    "a token transport failure naming the ApplicationId alone, in lower case (a host it was sent to)",
    (fake) =>
      fake.scriptToken(...times(4, () => failWith(`getaddrinfo ENOTFOUND ${APPLICATION_ID.toLowerCase()}.invalid`))),
    [get]
  ],
  ["a transport failure whose detail holds the bare token, without its Bearer", (fake) =>
    fake.scriptData(
      ...times(4, (request) =>
        failWith(`socket said token=${headerOf(request, "authorization")!.slice("Bearer ".length)}`))
    ), [get]],
  [
    "a token transport failure whose detail holds the ApplicationId",
    (fake) => fake.scriptToken((request) => failWith(echo(request))),
    [get]
  ],
  ["a timeout", (fake) => fake.scriptData(() => ({ _tag: "Hang" })), [get]],
  // One form at a time: an error keeps 500 characters, and each form must be seen within them.
  ...FORMS.flatMap(([form, write]): ReadonlyArray<Flow> => {
    const echoed = (request: WireRequest) => {
      const body = request.body ?? ""
      const values = [
        ...Object.values(JSON.parse(body) as Record<string, string>),
        ...Object.values(request.headers),
        body
      ]
      return values.flatMap(write).join(" ")
    }
    return [
      [
        `Success: false echoing every secret, ${form}`,
        (fake) =>
          fake.scriptData((request) =>
            respond(400, { Success: false, ErrorType: echoed(request), ErrorMessage: echoed(request) })(request)
          ),
        [get]
      ],
      [
        `the token host's Success: false echoing the ApplicationId, ${form}`,
        (fake) =>
          fake.scriptToken((request) => respond(400, { Success: false, ErrorMessage: echoed(request) })(request)),
        [get]
      ],
      [
        `a transport failure whose detail holds every secret, ${form}`,
        (fake) => fake.scriptData(...times(4, (request) => failWith(echoed(request)))),
        [get]
      ]
    ]
  }),
  ["a PersonUid refused for a CR/LF", nothing, [{ _tag: "Medications", personUid: `${PERSON_UID}\r\n` }]],
  ["a PersonUid refused for its length", nothing, [{ _tag: "Medications", personUid: PERSON_UID.repeat(100) }]],
  ["a PersonUid refused for a space", nothing, [{ _tag: "Medications", personUid: `${PERSON_UID} ${APPLICATION_ID}` }]]
]

/** Throws (failing the test, whatever the runner) if any text of `observed` holds a secret. */
const expectNoSecret = (observed: Observed) => {
  if (observed.logLines.length === 0) throw new Error("no log line was captured: the check would see nothing")
  const texts = [
    ...observed.logLines.map((line) => ["log line", line] as const),
    ...observed.failureTexts
  ]
  for (const [label, text] of texts) {
    const leak = leakIn(text, SECRETS)
    if (leak !== undefined) throw new Error(`${label} leaks a secret (${leak}): ${text.slice(0, 2000)}`)
  }
}

/** The privacy specification, for `driver`'s line. */
export const privacy = ({ describe, it }: Runner, driver: Driver): void => {
  describe(`no secret in logs, errors or causes (${driver.line})`, () => {
    for (const [name, prepare, steps] of flows) {
      it(name, async () => {
        const fake = new FakeService()
        prepare(fake)
        expectNoSecret(await driver.run(fake, steps))
      })
    }

    it("a refused ApplicationId never appears in the layer's error or the logs", async () => {
      const observed = await driver.run(new FakeService(), [get], {
        applicationId: `${APPLICATION_ID}\r\nX-Injected: yes`
      })
      if (observed.failureTag !== "InvalidConfig") {
        throw new Error(`expected the layer to fail InvalidConfig, got ${observed.failureTag}`)
      }
      expectNoSecret(observed)
    })
  })
}
