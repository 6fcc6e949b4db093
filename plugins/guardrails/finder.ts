/** How the matching kinds look for a value: the first one at or after a position of the text. */

export interface Span {
  start: number;
  end: number;
}

/** The first value at or after `from` in `text`, or undefined. */
export type Finder = (text: string, from: number) => Span | undefined;

/** A global regular expression as a finder (its `lastIndex` is set on every call). */
export function regexFinder(pattern: RegExp): Finder {
  return (text, from) => {
    pattern.lastIndex = from;
    const match = pattern.exec(text);
    return match === null ? undefined : { start: match.index, end: match.index + match[0].length };
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
  return (text, from) => {
    let first: Span | undefined;
    for (const { anchor, offset, shape } of shapes) {
      for (let at = text.indexOf(anchor, from + offset); at !== -1 && (first === undefined || at - offset < first.start); at = text.indexOf(anchor, at + 1)) {
        shape.lastIndex = at - offset;
        if (shape.test(text)) {
          first = { start: at - offset, end: shape.lastIndex };
          break;
        }
      }
    }
    return first;
  };
}

/** The first value any of `finders` finds (no two of which can match at the same place). */
export function firstOf(...finders: Finder[]): Finder {
  return (text, from) => {
    let first: Span | undefined;
    for (const find of finders) {
      const span = find(text, from);
      if (span !== undefined && (first === undefined || span.start < first.start)) first = span;
    }
    return first;
  };
}
