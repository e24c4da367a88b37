/** What every benchmark script reads from its command line, and how it sums up rounds. */

/** The value after `--name` on the command line, or `fallback`. */
export const option = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(name)
  return i < 0 ? fallback : process.argv[i + 1]!
}

/** Whether `--name` is on the command line. */
export const flag = (name: string): boolean => process.argv.includes(name)

/** The middle value (the upper one of an even count). */
export const median = (values: ReadonlyArray<number>): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
