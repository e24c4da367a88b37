/**
 * What the specification asks of an Effect line: run a flow of calls against a client over a
 * {@link FakeService} in memory, the clock driven, and hand back everything a user could print.
 * Each line implements it once (test/support/line.ts, effect4/test/support/line.ts); the
 * specifications (spec/privacy.ts, spec/hostile.ts) are written against it, so both lines are held
 * to one text. `networked` does the same over real sockets: a client of a server on 127.0.0.1,
 * through the line's transports, on the live clock (spec/hostile.ts, spec/endToEnd.ts).
 */
import type { TokenMetadata } from "../core/promiseClient.js"
import type { FakeService } from "./fakeService.js"

/** One step of a flow. */
export type Step =
  /** A person's medications; with `redacted`, the PersonUid is passed as the line's `Redacted`. */
  | {
    readonly _tag: "Medications"
    readonly personUid: string
    readonly redacted?: boolean
    readonly startDate?: string
  }
  /** A person's medications, each decoded with the Schema `{ Name: string }`. */
  | { readonly _tag: "MedicationsAs"; readonly personUid: string }
  /** The token, logged whole by the application (as a careless one would), with the PersonUid `Redacted`. */
  | { readonly _tag: "LogToken"; readonly personUid: string }
  /** The test clock moved on. */
  | { readonly _tag: "Advance"; readonly millis: number }
  /** The fake forgets every token it issued. */
  | { readonly _tag: "RevokeAll" }

/** Client settings a flow overrides (the rest: the fake's URL and ApplicationId, retries on). */
export interface Overrides {
  readonly applicationId?: string
}

/** What a user could see of a flow. */
export interface Observed {
  /** Every log line, at every level, in each of the line's formats (logfmt and JSON). */
  readonly logLines: ReadonlyArray<string>
  /** The failure's tag when the flow failed (a layer's failure included). */
  readonly failureTag: string | undefined
  /** Every text a user could print of the failure, labelled: the cause, each error's message, JSON, inspection, stack. */
  readonly failureTexts: ReadonlyArray<readonly [string, string]>
}

/**
 * A transport over a network, by name: undici called directly, or the line's HttpClient over fetch;
 * and two of the application's own fetch clients, for a test each: one told to follow redirects
 * itself, one given a `RequestInit` whose header `x-proxy-authorization: proxy` every request carries.
 */
export type Transport = "undici" | "fetch" | "fetch following redirects" | "fetch with a RequestInit"

/**
 * How a data call goes: on the Effect path (the first call of a client, with no token yet, and
 * every call of a transport that cannot answer in its callback), or on the call's common path (a
 * token already cached, over a transport that can), which reads the answer in the transport's
 * callback. A line names the paths each transport has; each must hold.
 */
export type CallPath = "effect path" | "common path"

/** A duration as both lines' options take it. */
export type Duration = `${number} ${"millis" | "second" | "seconds"}`

/** The client's settings over a network, as plain values both lines' options accept ("1 second", numbers). */
export interface NetworkSettings {
  readonly applicationId: string
  readonly requestTimeout?: Duration
  readonly tokenTimeout?: Duration
  readonly deadline?: Duration
  readonly maxRetries?: number
  readonly retryBaseDelay?: Duration
  readonly maxResponseBytes?: number
  readonly maxRetryAfter?: Duration
  readonly maxConcurrentRequests?: number
  readonly initialConcurrency?: number
}

/** The PersonUid the flow's last `Authenticate` step got, passed on `Redacted`, as the line returned it. */
export interface Authenticated {
  readonly _tag: "Authenticated"
}

export const AUTHENTICATED: Authenticated = { _tag: "Authenticated" }

/** A person: a PersonUid as plain text, or the one the last `Authenticate` step got. */
export type PersonRef = string | Authenticated

/** The documented person-data operations, by the name of each line's `PersonData` definition. */
export type PersonDataOperation = "medications" | "ethnicities" | "detailedEthnicities" | "uniqueDeviceIdentifiers"

/** One step of a flow over a network; each has an {@link Outcome}, and a failed one does not end the flow. */
export type NetworkStep =
  /** A person's medications; succeeds with `{ medications }`. */
  | { readonly _tag: "Medications"; readonly personUid: PersonRef }
  /** The authenticate operation; succeeds with `{ personUid }`, the PersonUid revealed (for the specification to compare). */
  | { readonly _tag: "Authenticate"; readonly passCode: string; readonly dateOfBirth: string }
  /**
   * A person-data operation through `PersonData`, with an optional date range (`YYYY-MM-DD`), its
   * items kept whole or, with `as: "Ethnicity"`, decoded with the line's `PersonData.Ethnicity`.
   * Succeeds with `{ items }`.
   */
  | {
    readonly _tag: "PersonData"
    readonly operation: PersonDataOperation
    readonly personUid: PersonRef
    readonly as?: "Ethnicity"
    readonly startDate?: string
    readonly endDate?: string
  }
  /**
   * A person's medications decoded with a Schema: `Named` is `{ Name: string }`, `NumbersByKey` a
   * record of strings to numbers. Succeeds with `{ medications }`.
   */
  | { readonly _tag: "MedicationsAs"; readonly personUid: string; readonly schema: "Named" | "NumbersByKey" }
  /** The token service's token; succeeds with its {@link TokenFacts}. */
  | { readonly _tag: "Token" }
  /** The token the last `Token` step got, invalidated. */
  | { readonly _tag: "InvalidateToken" }
  /** The flow sleeps on the live clock. */
  | { readonly _tag: "Sleep"; readonly millis: number }
  /** The flow waits for the specification's own work (a count, a condition); succeeds with what it resolved to. */
  | { readonly _tag: "Await"; readonly what: () => Promise<unknown> }
  /** `count` runs of `step` at once; succeeds with their outcomes, in order. */
  | { readonly _tag: "Concurrently"; readonly count: number; readonly step: NetworkStep }
  /** Each of `steps`, at most `concurrency` at once (default: all); succeeds with their outcomes, in order. */
  | { readonly _tag: "All"; readonly steps: ReadonlyArray<NetworkStep>; readonly concurrency?: number }
  /** `count` runs of `step` started in the background (see `InterruptForked`, `JoinForked`). */
  | { readonly _tag: "Fork"; readonly count: number; readonly step: NetworkStep }
  /** Every run `Fork` started, interrupted (the step ends once each has ended). */
  | { readonly _tag: "InterruptForked" }
  /** Every run `Fork` started, waited for; succeeds with their outcomes, in the order they were started. */
  | { readonly _tag: "JoinForked" }

/** A token as plain data: no secret in it (what the Promise client's `token()` shows). */
export type TokenFacts = TokenMetadata

/** A typed failure as plain data: its tag, its message and its fields. */
export interface Failure {
  readonly _tag: string
  readonly message: string
  readonly [field: string]: unknown
}

/** What a step came to. */
export type Outcome =
  | { readonly _tag: "Success"; readonly value: unknown }
  | { readonly _tag: "Failure"; readonly error: Failure }

/** What a user could see of a flow over a network (its `failureTexts` hold every failure's texts, each step's too). */
export interface ObservedAt extends Observed {
  /** The first failure: the layer's, the common path's first token's (each ends the flow), or a step's. */
  readonly failure: Failure | undefined
  /** Each step's outcome, in order (none when the layer or the common path's first token failed). */
  readonly outcomes: ReadonlyArray<Outcome>
  /** From the client's layer built to the last step's end, on the wall clock. */
  readonly elapsedMillis: number
  /** Every attribute of every span the flow made, its value as text (only when `runAt` was told to trace). */
  readonly spanAttributes: ReadonlyArray<readonly [string, string]>
}

/** The line's client over real sockets. */
export interface Networked {
  /** Each transport over which every test runs ("undici", "fetch"), with the call paths it has. */
  readonly transports: ReadonlyArray<readonly [Transport, ReadonlyArray<CallPath>]>
  /**
   * Runs `steps` in order against a client of `baseUrl` (a fresh one, closed at the end) over
   * `transport`, on the live clock, every log line captured. On the common path the client takes
   * its token first, so that its data calls find one cached. With `traced`, under a tracer that
   * keeps every span (else under none, as most applications run).
   */
  readonly runAt: (
    baseUrl: string,
    transport: Transport,
    path: CallPath,
    steps: ReadonlyArray<NetworkStep>,
    settings: NetworkSettings,
    traced?: boolean
  ) => Promise<ObservedAt>
}

/** The settings of a client in memory: the network's (but the ApplicationId, the fake's), and the load control's. */
export interface MemorySettings extends Omit<NetworkSettings, "applicationId"> {
  readonly circuitBreakerThreshold?: number
  readonly adaptiveConcurrency?: boolean
  readonly retryBudget?: boolean
  /**
   * Whether the test clock stops at each delayed answer of the fake ({@link FakeService.clockStepMillis}),
   * rather than moving 100 ms at a time: a service of 15 ms answers needs it, or every round trip
   * reads as 100 ms.
   */
  readonly clockToEachAnswer?: boolean
}

/** An Effect line, as the specification drives it. */
export interface Driver {
  /** "Effect 3" or "Effect 4": in the tests' names. */
  readonly line: string
  /** Runs `steps` in order (the first failure ends the flow) against a client over `fake`. */
  readonly run: (fake: FakeService, steps: ReadonlyArray<Step>, overrides?: Overrides) => Promise<Observed>
  /** The line over real sockets. */
  readonly networked: Networked
  /**
   * Runs `steps` as {@link Networked.runAt} does, against a client over `fake` through the line's
   * in-memory transport, under the line's test clock (moved on 100 ms at a time, so that every
   * timeout, backoff and `Sleep` step fires, and a `Respond`'s `afterMillis` is waited for), with
   * the retries' jitter fixed at the middle: every count and every outcome is exact.
   * `elapsedMillis` is the test clock's.
   */
  readonly inMemory: (
    fake: FakeService,
    steps: ReadonlyArray<NetworkStep>,
    settings?: MemorySettings
  ) => Promise<ObservedAt>
}

/** The test functions of the runner a line's suite runs under (each line has its own vitest). */
export interface Runner {
  readonly describe: (name: string, body: () => void) => void
  readonly it: (name: string, body: () => Promise<void>, timeoutMillis?: number) => void
}
