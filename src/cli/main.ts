/**
 * The command line's program, which the `effect-clinical` executable (bin.ts) starts: runs it with
 * Node's services and ends the process with the documented exit code. A typed failure prints its
 * message (no stack trace); `CLINICAL_STACK=1` prints Effect's whole cause; a defect always does.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { cli } from "./app.js"
import { asksForHelp, colourWanted, commandPath, fitHelp, withoutColour } from "./help.js"
import { describeCause, exitCodeOfCause, hideTypedValues, isTypedFailure, usage } from "./outcome.js"
import { printable, printableLines } from "./render.js"

const wantsStack = process.env.CLINICAL_STACK === "1"

// A reader that stops early (`| head`) closes the pipe: that ends the output, quietly.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0)
  throw error
})

const args = process.argv.slice(2)
const colour = {
  stdout: colourWanted(process.stdout.isTTY === true, process.env),
  stderr: colourWanted(process.stderr.isTTY === true, process.env)
}
const showsHelp = asksForHelp(args)

/** What @effect/cli prints: help fit for the terminal (or pipe), no colour where none is wanted. */
const forStdout = (text: string): string =>
  showsHelp
    ? fitHelp(text, { colour: colour.stdout, name: "effect-clinical", path: commandPath(args) })
    : colour.stdout
    ? text
    : withoutColour(text)

// @effect/cli prints usage errors with what was typed; no typed value is shown (it may be a secret).
const forStderr = (text: string): string => {
  const hidden = hideTypedValues(text)
  return colour.stderr ? hidden : withoutColour(hidden)
}

const guarded = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.console, (console) =>
    Effect.withConsole(effect, {
      ...console,
      log: (...parts: ReadonlyArray<unknown>) =>
        console.log(...parts.map((part) => (typeof part === "string" ? forStdout(part) : part))),
      error: (...parts: ReadonlyArray<unknown>) =>
        console.error(...parts.map((part) => (typeof part === "string" ? forStderr(part) : part)))
    }))

/**
 * `--env-file` is Node's own option, which Node 20 reads wherever it stands (nodejs/node#54232),
 * `NODE_OPTIONS` lines included, before this program starts: ours is `--settings-file`.
 */
const nodesOwn = (args: ReadonlyArray<string>): boolean =>
  args.some((arg) => arg === "--env-file" || arg.startsWith("--env-file="))

const run = Effect.suspend(() =>
  nodesOwn(args)
    ? Effect.fail(
      usage(
        "--env-file is Node's own option (Node 20 reads the file itself, NODE_OPTIONS lines included, " +
          "wherever it stands on the command line): use --settings-file"
      )
    )
    : cli(process.argv)
)

const program = guarded(run).pipe(
  Effect.tapErrorCause((cause) =>
    Effect.sync(() => {
      const text = wantsStack && !Cause.isInterruptedOnly(cause) ? Cause.pretty(cause) : describeCause(cause)
      // A typed failure's message is one line; a whole cause (a stack) keeps its lines, each made printable.
      const lines = wantsStack || !isTypedFailure(cause)
      if (text !== undefined) process.stderr.write(`error: ${lines ? printableLines(text) : printable(text)}\n`)
    })
  ),
  Effect.provide(NodeContext.layer),
  // The library's log lines only when --log-level asks for them (it sets the level inside): a
  // failure is said once, by its error line. They go to stderr, made printable: stdout carries
  // data only, and logfmt writes a value without spaces as it is, escapes included.
  Effect.provide(Layer.merge(
    Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.map(Logger.logfmtLogger, printable))),
    Logger.minimumLogLevel(LogLevel.None)
  ))
)

NodeRuntime.runMain(program, {
  disableErrorReporting: true,
  disablePrettyLogger: true,
  teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) ? 0 : exitCodeOfCause(exit.cause))
})
