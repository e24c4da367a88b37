/** The core's recognisers of what a JavaScript caller hands over (core/callerValues.ts), with Effect 3's log levels. */
import * as LogLevel from "effect/LogLevel"
import * as Core from "../../core/callerValues.js"

export { isAbortSignal, isThenable } from "../../core/callerValues.js"

const LEVELS: Core.Levels<LogLevel.LogLevel> = {
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  error: LogLevel.Error,
  lessThan: (a, b) => LogLevel.lessThan(a, b)
}

/** The level a logger is given: Effect's Trace and Debug are "debug", Fatal is "error". */
export const levelName = (level: LogLevel.LogLevel): "debug" | "info" | "warn" | "error" =>
  Core.levelName(level, LEVELS)
