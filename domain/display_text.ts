/**
 * The one rule for text a person gives to be shown to people (display names, tags, notes, client names): no control
 * characters (C0, DEL and C1; a note may hold line breaks and tabs, and U+2028/U+2029, the line and paragraph
 * separators, which a name may not), and no bidirectional embeddings, overrides or isolates (U+202A–U+202E,
 * U+2066–U+2069), which make text read as something else: `"\u202Egnp.exe"` shows as `exe.png`. Before, C1
 * (U+0080–U+009F) and the separators passed, though the refusal named control characters. The directional marks
 * (U+200E, U+200F, U+061C) stay allowed: they only set the direction of neutral characters beside them, and text copied
 * from right-to-left scripts carries them. Other invisible characters stay allowed too (a zero-width joiner is part of
 * many emoji, tag characters of the flags of England, Scotland and Wales).
 */

const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const CONTROL_EXCEPT_LINES = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
const BIDI_CONTROL = /[\u202a-\u202e\u2066-\u2069]/;

/** Why `text` may not be shown as given (in words naming `field`); undefined when it may. */
export function displayTextProblem(field: string, text: string, options: { readonly multiline?: boolean } = {}): string | undefined {
  if ((options.multiline === true ? CONTROL_EXCEPT_LINES : CONTROL).test(text)) return `${field} must not contain control characters`;
  if (BIDI_CONTROL.test(text)) return `${field} must not contain bidirectional control characters`;
  return undefined;
}
