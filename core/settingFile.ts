/**
 * Reading a file a setting names (a CA bundle, a certificate, a key), bounded: a regular file of at
 * most a mebibyte, never a device that never ends nor a directory. A refusal names the setting and
 * the error's code, never the file's text (it may be a key).
 */
import * as Fs from "node:fs"

/** Largest file a setting may name: a CA bundle or a certificate is kilobytes. */
export const MAX_SETTING_FILE_BYTES = 1024 * 1024

/** The file's bytes, or the setting refused and why. */
export type SettingFile =
  | { readonly ok: true; readonly value: Buffer }
  | { readonly ok: false; readonly setting: string; readonly reason: string }

/** The bytes of the file at `path`, which the setting `setting` names. */
export const readSettingFile = (setting: string, path: string): SettingFile => {
  const refused = (reason: string): SettingFile => ({ ok: false, setting, reason })
  try {
    const stat = Fs.statSync(path)
    if (!stat.isFile()) return refused("names something that is not a file")
    if (stat.size > MAX_SETTING_FILE_BYTES) return refused("names a file larger than 1 MiB")
    return { ok: true, value: Fs.readFileSync(path) }
  } catch (cause) {
    const code = (cause as { readonly code?: unknown }).code
    return refused(`names a file that cannot be read (${typeof code === "string" ? code : "error"})`)
  }
}
