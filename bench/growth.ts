/** The growth scenarios of `npm run bench`: how CPU per request and memory move with the models in the config and the consumers sending. */

/**
 * The growth scenarios: an LLM miss with the production features, on the embedded store, each
 * request's model and consumer drawn at random from `models` and `consumers`.
 */
export const GROWTH: Array<{ models: number; consumers: number }> = [
  { models: 1, consumers: 1 },
  { models: 1000, consumers: 1 },
  { models: 1, consumers: 10_000 },
  { models: 1, consumers: 100_000 },
  { models: 1000, consumers: 100_000 },
];
const short = (n: number) => (n >= 1000 ? `${n / 1000}k` : String(n));
export const growthId = (g: { models: number; consumers: number }) => `growth-${short(g.models)}x${short(g.consumers)}`;
