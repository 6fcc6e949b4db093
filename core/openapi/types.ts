/** The slice of the OpenAPI 3.0.3 object model the generator writes. */

/** A JSON Schema object as OpenAPI 3.0 accepts it (plain data, no TypeBox symbols). */
export type Schema = Record<string, unknown>;

export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  description?: string;
  schema: Schema;
}

export interface MediaType {
  schema: Schema;
}

export interface RequestBody {
  required?: boolean;
  description?: string;
  content: Record<string, MediaType>;
}

export interface ResponseObject {
  description: string;
  headers?: Record<string, { description?: string; schema: Schema }>;
  content?: Record<string, MediaType>;
}

export type ResponseOrRef = ResponseObject | { $ref: string };

export interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  deprecated?: boolean;
  parameters?: Parameter[];
  requestBody?: RequestBody;
  responses: Record<string, ResponseOrRef>;
  callbacks?: Record<string, Record<string, Partial<Record<Method, Operation>>>>;
}

export type Method = "get" | "post" | "put" | "delete" | "patch";

export type PathItem = Partial<Record<Method, Operation>> & { description?: string };

export type Paths = Record<string, PathItem>;

export interface Tag {
  name: string;
  description?: string;
}

export interface OpenApiDocument {
  openapi: "3.0.3";
  info: { title: string; version: string; description: string };
  servers: Array<{ url: string; description?: string }>;
  tags: Tag[];
  paths: Paths;
  components: {
    schemas: Record<string, Schema>;
    responses: Record<string, ResponseObject>;
    securitySchemes?: Record<string, Record<string, unknown>>;
  };
  security?: Array<Record<string, string[]>>;
}
