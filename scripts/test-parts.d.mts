/** The types of `test-parts.mjs` (plain JavaScript: npm runs it before anything is built). */
export declare const installLine: (packages: ReadonlyArray<string>, root?: boolean) => string
export declare const missingPackages: (path: string | undefined) => Array<string>
export declare const missingMessage: (packages: ReadonlyArray<string>, why: string, root?: boolean) => string
export declare const ensureParts: (
  env?: Record<string, string | undefined>,
  log?: (line: string) => void,
  root?: boolean
) => number
