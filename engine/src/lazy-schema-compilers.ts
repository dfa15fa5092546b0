/**
 * Fastify's own schema compilers (Ajv for requests, fast-json-stringify for responses), each
 * route's compiled on the first request that needs it instead of all at once when the app starts,
 * and the compilers themselves loaded only then. The control API has dozens of routes, most never
 * called in a process's life, and the KServe HTTP server has no schema at all; loading Ajv and
 * compiling every route held the JS thread for a fifth of a warm start that also loads the models.
 */
import { createRequire } from 'node:module';

type Validate = ((data: unknown) => unknown) & { errors?: unknown };
type Serialize = (data: unknown) => string;
type RouteSchema = { readonly schema: unknown };
type Build<F> = (externalSchemas: unknown, options: unknown) => (route: RouteSchema) => F;

/** What Fastify's `schemaController.compilersFactory` takes (its types are Fastify's internals). */
export interface SchemaCompilersFactory {
  buildValidator: Build<Validate>;
  buildSerializer: Build<Serialize>;
}

const require = createRequire(import.meta.url);

export function lazySchemaCompilers(): SchemaCompilersFactory {
  // One factory each, as Fastify keeps one (it pools compilers by their external schemas and options).
  let validators: Build<Validate> | null = null;
  let serializers: Build<Serialize> | null = null;
  const loadValidators = (): Build<Validate> =>
    (validators ??= (require('@fastify/ajv-compiler') as { AjvCompiler: () => Build<Validate> }).AjvCompiler());
  const loadSerializers = (): Build<Serialize> =>
    (serializers ??= (
      require('@fastify/fast-json-stringify-compiler') as { SerializerSelector: () => Build<Serialize> }
    ).SerializerSelector());
  return {
    buildValidator(externalSchemas, options) {
      let compile: ((route: RouteSchema) => Validate) | null = null;
      return (route) => {
        let fn: Validate | null = null;
        // Fastify reads `errors` off the function it called, as Ajv's validators carry them.
        const validate: Validate = (data) => {
          fn ??= (compile ??= loadValidators()(externalSchemas, options))(route);
          const ok = fn(data);
          validate.errors = fn.errors;
          return ok;
        };
        return validate;
      };
    },
    buildSerializer(externalSchemas, options) {
      let compile: ((route: RouteSchema) => Serialize) | null = null;
      return (route) => {
        let fn: Serialize | null = null;
        return (data) => (fn ??= (compile ??= loadSerializers()(externalSchemas, options))(route))(data);
      };
    },
  };
}
