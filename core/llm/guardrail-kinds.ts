/**
 * The contract of a guardrail kind a plugin adds (docs/guardrails.md#a-kind-of-your-own): a
 * function from the texts a model reads or writes to a verdict, sync or async. The
 * `guardrailKinds` service (provided by the `guardrails` plugin) takes it; a rule of that `kind`
 * in the `guardrails` list then runs it, with the rule's `settings`.
 */

/** What the check is asked about: the stage, the request's model alias and consumer, the rule's own settings. */
export interface GuardrailCheckContext {
  readonly stage: "input" | "output";
  readonly model: string;
  /** The consumer, "" when the request names none. */
  readonly consumer: string;
  /** The rule's name. */
  readonly rule: string;
  /** The rule's `settings` (a free map: the kind says what it reads). */
  readonly settings: Readonly<Record<string, unknown>>;
}

/** A kind's answer: let the texts pass, refuse them (`reason` goes into the error message), or replace them (`texts` in the same order). */
export type GuardrailVerdict =
  | { readonly action: "allow" }
  | { readonly action: "block"; readonly reason?: string }
  | { readonly action: "mask"; readonly texts: readonly string[] };

export interface GuardrailKind {
  /** The rule's `kind` (not one of the built-in ones: `regex`, `pii`, `http`). */
  readonly name: string;
  /**
   * The verdict on `texts` (every text the model reads, or writes, in order). On a stream it is
   * asked every `stream_check_every` characters with the text so far, and at the end. A throw
   * counts as a failed check (`svc_guardrail_errors_total`), which the rule's `failure` decides.
   */
  check(texts: readonly string[], context: GuardrailCheckContext): GuardrailVerdict | Promise<GuardrailVerdict>;
}

/** The `guardrailKinds` service. */
export interface GuardrailKinds {
  /** Throws when the name is a built-in kind or already registered. */
  register(kind: GuardrailKind): void;
}

declare module "../plugins/types.ts" {
  interface GatewayServices {
    /** Provided by the `guardrails` plugin. */
    guardrailKinds: GuardrailKinds;
  }
}
