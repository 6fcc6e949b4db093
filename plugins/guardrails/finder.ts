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
