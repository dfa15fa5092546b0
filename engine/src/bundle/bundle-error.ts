/**
 * Bundle validation errors. Every message starts with the file and the field path inside it
 * (`.../manifest.yaml: executable_inputs[0].dims.f: ...`) because the person reading it is
 * looking at that file in an editor, often for a bundle they did not write.
 */
import { ServeError } from '@hloserve/common/errors';

export function bundleError(file: string, field: string | null, message: string, cause?: unknown): ServeError {
  const where = field ? `${file}: ${field}` : file;
  return new ServeError('HLO_ERR_BUNDLE_INVALID', `${where}: ${message}`, cause === undefined ? undefined : { cause });
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `parent.key`, or `parent["odd key"]` when the key would not read as one path segment. */
export function fieldPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  if (!IDENTIFIER.test(key)) return `${parent}[${JSON.stringify(key)}]`;
  return parent ? `${parent}.${key}` : key;
}
