/**
 * A guardrail's refusal: 400 with `{"error":{"message","type":"guardrail_blocked","code":"<rule name>"}}`
 * (docs/errors.md); on a client protocol's paths the protocol's error middleware puts it in
 * that protocol's shape, the code kept.
 */
import { errorResponse, GatewayError } from "../../core/errors.ts";

export class GuardrailBlocked extends GatewayError {
  constructor(
    readonly rule: string,
    message: string,
  ) {
    super(400, "guardrail_blocked", message, {}, "guardrail_blocked");
  }

  override toResponse(): Response {
    const response = errorResponse(this.status, this.type, this.message, this.headers);
    return new Response(JSON.stringify({ error: { message: this.message, type: this.type, code: this.rule } }), {
      status: response.status,
      headers: response.headers,
    });
  }
}
