/**
 * Orders what several plugins contribute to one view (API document, console tabs): the
 * entries a layout names first, in its order, then the others in the order they came
 * (plugin by plugin, by name). So a collecting plugin can keep its built-in entries where
 * they always were, and a new plugin's entries need no change to it.
 */
export function inLayout<T>(items: readonly T[], keyOf: (item: T) => string, layout: readonly string[]): T[] {
  const rank = (item: T) => {
    const index = layout.indexOf(keyOf(item));
    return index === -1 ? layout.length : index;
  };
  // Array sort is stable: items of equal rank keep the order they came in.
  return [...items].sort((a, b) => rank(a) - rank(b));
}
