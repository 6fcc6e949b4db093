/**
 * How the matching kinds look for a value: the first one at or after a position of the text.
 * A finder writes where into the search's one span instead of making an object per value: a
 * prompt may hold dozens of values, and each object a request allocates costs the gateway more
 * than it costs a loop, its young generation holding the requests in flight (bench/README.md,
 * "Guardrails").
 */

export interface Span {
  start: number;
  end: number;
}

/**
 * Finds the first value at or after `from` in `text`: writes where it is into `found` and
 * returns true, or returns false. One `found` serves a whole search, written again each time.
 */
export type Finder = (text: string, from: number, found: Span) => boolean;

/** A global regular expression as a finder (its `lastIndex` is set on every call). */
export function regexFinder(pattern: RegExp): Finder {
  return (text, from, found) => {
    pattern.lastIndex = from;
    const match = pattern.exec(text);
    if (match === null) return false;
    found.start = match.index;
    found.end = match.index + match[0].length;
    return true;
  };
}

/**
 * Shapes (sticky expressions) found from a rare text each holds, its `anchor`, `offset`
 * characters after the shape's start: the first value at or after `from` is at the first anchor
 * found (`indexOf`, which skips through text far faster than an expression that must try every
 * position) whose shape matches. When no two shapes can match at the same place, this finds
 * what one expression of them as alternatives finds.
 */
export function anchoredFinder(shapes: ReadonlyArray<{ anchor: string; offset: number; shape: RegExp }>): Finder {
  return (text, from, found) => {
    let start = -1;
    let end = -1;
    for (const { anchor, offset, shape } of shapes) {
      for (let at = text.indexOf(anchor, from + offset); at !== -1 && (start === -1 || at - offset < start); at = text.indexOf(anchor, at + 1)) {
        shape.lastIndex = at - offset;
        if (shape.test(text)) {
          start = at - offset;
          end = shape.lastIndex;
          break;
        }
      }
    }
    if (start === -1) return false;
    found.start = start;
    found.end = end;
    return true;
  };
}

/** The first value any of `finders` finds (no two of which can match at the same place). */
export function firstOf(...finders: Finder[]): Finder {
  const each: Span = { start: 0, end: 0 };
  return (text, from, found) => {
    let any = false;
    for (const find of finders) {
      if (find(text, from, each) && (!any || each.start < found.start)) {
        found.start = each.start;
        found.end = each.end;
        any = true;
      }
    }
    return any;
  };
}
