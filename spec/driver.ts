/**
 * What the specification asks of an Effect line: run a flow of calls against a client over a
 * {@link FakeService} in memory, the clock driven, and hand back everything a user could print.
 * Each line implements it once (test/support/line.ts, effect4/test/support/line.ts); the
 * specifications (spec/*.spec.ts) are written against it, so both lines are held to one text.
 */
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

/** An Effect line, as the specification drives it. */
export interface Driver {
  /** "Effect 3" or "Effect 4": in the tests' names. */
  readonly line: string
  /** Runs `steps` in order (the first failure ends the flow) against a client over `fake`. */
  readonly run: (fake: FakeService, steps: ReadonlyArray<Step>, overrides?: Overrides) => Promise<Observed>
}

/** The test functions of the runner a line's suite runs under (each line has its own vitest). */
export interface Runner {
  readonly describe: (name: string, body: () => void) => void
  readonly it: (name: string, body: () => Promise<void>) => void
}
