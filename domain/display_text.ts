/**
 * The one rule for text a person gives to be shown to people (display names, tags, notes, client names): no control
 * characters (C0 and DEL; a note may hold line breaks and tabs), and no bidirectional controls (U+202A–U+202E,
 * U+2066–U+2069), which make text read as something else: `"\u202Egnp.exe"` shows as `exe.png`. Other invisible
 * characters stay allowed (a zero-width joiner is part of many emoji).
 */

const CONTROL = /[\u0000-\u001f\u007f]/;
const CONTROL_EXCEPT_LINES = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
const BIDI_CONTROL = /[\u202a-\u202e\u2066-\u2069]/;

/** Why `text` may not be shown as given (in words naming `field`); undefined when it may. */
export function displayTextProblem(field: string, text: string, options: { readonly multiline?: boolean } = {}): string | undefined {
  if ((options.multiline === true ? CONTROL_EXCEPT_LINES : CONTROL).test(text)) return `${field} must not contain control characters`;
  if (BIDI_CONTROL.test(text)) return `${field} must not contain bidirectional control characters`;
  return undefined;
}
