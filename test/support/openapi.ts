/**
 * docs/openapi.yaml as a checker of real responses: the status must be
 * documented for the operation, the body must match the documented schema
 * (JSON Schema 2020-12 through Ajv, formats through ajv-formats), and every
 * documented header must be present when required and match its schema when
 * present. The document's `$ref`s are resolved by @apidevtools/swagger-parser.
 */
import { readFileSync } from "node:fs";
import SwaggerParser from "@apidevtools/swagger-parser";
import type { ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { parse } from "yaml";

export const OPENAPI_FILE = new URL("../../docs/openapi.yaml", import.meta.url);

// biome-ignore lint/suspicious/noExplicitAny: the parsed document is plain JSON walked by key.
export type Json = any;

/** The YAML parsed as is, `$ref`s unresolved. */
export function readOpenApiDocument(): Json {
  return parse(readFileSync(OPENAPI_FILE, "utf8"));
}

/** Ajv for bodies: strict, so a misspelt keyword in the document is an error, not a silent no-op. */
export function strictAjv(options: { coerceTypes?: boolean } = {}): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true, ...options });
  // ajv-formats is CommonJS: under NodeNext its plugin is the module's `default`.
  addFormats.default(ajv);
  return ajv;
}

export interface ObservedResponse {
  readonly status: number;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** The body as received (text). */
  readonly text: string;
}

export class OpenApiChecker {
  private readonly bodies = strictAjv();
  /** Header values arrive as text: "60" must satisfy `type: integer`. */
  private readonly headerValues = strictAjv({ coerceTypes: true });

  private constructor(readonly document: Json) {}

  /** Resolves every `$ref` of a copy of the document. */
  static async load(): Promise<OpenApiChecker> {
    return new OpenApiChecker(await SwaggerParser.dereference(structuredClone(readOpenApiDocument())));
  }

  operation(path: string, method: string): Json {
    const operation = this.document.paths?.[path]?.[method.toLowerCase()];
    if (operation === undefined) throw new Error(`${method} ${path} is not in the document`);
    return operation;
  }

  /** Problems of `response` as an answer to the operation; empty when it matches the document. */
  check(path: string, method: string, response: ObservedResponse): string[] {
    const documented = this.operation(path, method).responses?.[String(response.status)];
    if (documented === undefined) return [`status ${response.status} is not documented`];
    const problems: string[] = [];
    for (const [name, header] of Object.entries<Json>(documented.headers ?? {})) {
      const value = response.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required === true) problems.push(`header ${name} is required but absent`);
        continue;
      }
      const validate = this.validator(this.headerValues, header.schema);
      if (!validate(value)) problems.push(`header ${name}: ${JSON.stringify(value)} ${describe(validate)}`);
    }
    const mediaType = (response.headers["content-type"] ?? "").split(";", 1)[0]?.trim() ?? "";
    const content = documented.content?.[mediaType];
    if (content === undefined) {
      problems.push(`content type ${JSON.stringify(mediaType)} is not documented for ${response.status}`);
      return problems;
    }
    if (mediaType !== "application/json") {
      // A text body (the event stream) is checked as a string against its schema.
      const validate = this.validator(this.bodies, content.schema);
      if (!validate(response.text)) problems.push(`body ${describe(validate)}`);
      return problems;
    }
    let body: unknown;
    try {
      body = JSON.parse(response.text);
    } catch {
      problems.push(`body is not JSON: ${JSON.stringify(response.text.slice(0, 200))}`);
      return problems;
    }
    const validate = this.validator(this.bodies, content.schema);
    if (!validate(body)) problems.push(`body ${describe(validate)}`);
    return problems;
  }

  /** Problems of a value against a schema of the document (for examples). */
  checkValue(schema: Json, value: unknown, coerce = false): string[] {
    const validate = this.validator(coerce ? this.headerValues : this.bodies, schema);
    return validate(value) ? [] : [describe(validate)];
  }

  /** Ajv keeps compiled schemas by object, so each schema is compiled once per instance. */
  private validator(ajv: Ajv2020, schema: Json): ValidateFunction {
    return ajv.compile(schema);
  }
}

function describe(validate: ValidateFunction): string {
  return (validate.errors ?? [])
    .map((e) => `${e.instancePath || "(root)"} ${e.message ?? ""} ${JSON.stringify(e.params)}`)
    .join("; ");
}
