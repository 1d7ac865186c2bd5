import { describe, expect, test } from "bun:test";
import { displayTextProblem } from "./display_text.ts";

describe("displayTextProblem(): text shown to people", () => {
  test("control and bidirectional control characters are refused, naming the field; a note keeps its line breaks", () => {
    expect(displayTextProblem("tags[0]", "a\u0000b")).toBe("tags[0] must not contain control characters");
    expect(displayTextProblem("displayName", "\u202Egnp.exe")).toBe("displayName must not contain bidirectional control characters");
    expect(displayTextProblem("displayName", "a\u2066b")).toBe("displayName must not contain bidirectional control characters");
    expect(displayTextProblem("displayName", "two\nlines")).toBe("displayName must not contain control characters");
    expect(displayTextProblem("notes", "two\nlines\r\n\tand a tab", { multiline: true })).toBeUndefined();
    expect(displayTextProblem("notes", "a\u0000b", { multiline: true })).toBe("notes must not contain control characters");
  });

  test("ordinary text passes: accents, scripts, emoji with zero-width joiners, right-to-left letters", () => {
    for (const text of ["Zoë's key", "鍵 1", "👨‍👩‍👧 family", "مفتاح", "עברית"]) expect({ text, problem: displayTextProblem("x", text) }).toEqual({ text, problem: undefined });
  });
});
