/** What every benchmark script reads from its command line, and how it orders and sums up rounds. */

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

/** `items` in the order of round `round`: rotated by one a round, so that none always runs first (or last). */
export const rotated = <A>(items: ReadonlyArray<A>, round: number): Array<A> =>
  items.map((_, i) => items[(i + round) % items.length]!)
