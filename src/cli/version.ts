/**
 * The version `--version` prints (and the telemetry's `service.version`): the package's that
 * carries the executable (the bundle is built into both lines' packages, scripts/bundle-cli.mjs
 * writes it in); run from source, this one's.
 */
declare const __EFFECT_CLINICAL_VERSION__: string | undefined
export const VERSION = typeof __EFFECT_CLINICAL_VERSION__ === "string" ? __EFFECT_CLINICAL_VERSION__ : "3.0.0"
