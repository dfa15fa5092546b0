/**
 * Fastify's own schema compilers (Ajv for requests, fast-json-stringify for responses), each
 * route's compiled on the first request that needs it instead of all at once when the app starts.
 * The control API has dozens of routes, most never called in a process's life, and compiling
 * them all held the JS thread for a fifth of a warm start that also loads the models.
 */
import { AjvCompiler } from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type Validate = ((data: unknown) => unknown) & { errors?: unknown };
type Serialize = (data: unknown) => string;
type RouteSchema = { readonly schema: unknown };

/** What Fastify's `schemaController.compilersFactory` takes (its types are Fastify's internals). */
export interface SchemaCompilersFactory {
  buildValidator(externalSchemas: unknown, options: unknown): (route: RouteSchema) => Validate;
  buildSerializer(externalSchemas: unknown, options: unknown): (route: RouteSchema) => Serialize;
}

export function lazySchemaCompilers(): SchemaCompilersFactory {
  const validators = AjvCompiler() as unknown as (ext: unknown, o: unknown) => (route: RouteSchema) => Validate;
  const serializers = SerializerSelector() as unknown as (
    ext: unknown,
    o: unknown,
  ) => (route: RouteSchema) => Serialize;
  return {
    buildValidator(externalSchemas, options) {
      const compile = validators(externalSchemas, options);
      return (route) => {
        let fn: Validate | null = null;
        // Fastify reads `errors` off the function it called, as Ajv's validators carry them.
        const validate: Validate = (data) => {
          fn ??= compile(route);
          const ok = fn(data);
          validate.errors = fn.errors;
          return ok;
        };
        return validate;
      };
    },
    buildSerializer(externalSchemas, options) {
      const compile = serializers(externalSchemas, options);
      return (route) => {
        let fn: Serialize | null = null;
        return (data) => (fn ??= compile(route))(data);
      };
    },
  };
}
