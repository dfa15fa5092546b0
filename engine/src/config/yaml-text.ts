/**
 * YAML parsing for hand-written files (node.yaml, manifest.yaml). YAML 1.2 core schema, so
 * `n`, `y`, `on` and `no` stay strings: shape letters and model names must not turn into
 * booleans the way YAML 1.1 would have them. Duplicate keys are an error, never last-one-wins.
 */
import { parse, YAMLParseError } from 'yaml';

export type YamlResult =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string };

export function parseYamlText(text: string): YamlResult {
  try {
    return { ok: true, value: parse(text, { uniqueKeys: true, prettyErrors: true, schema: 'core' }) };
  } catch (err) {
    if (err instanceof YAMLParseError) {
      // The pretty message carries a source excerpt after the first line; keep the line only.
      return { ok: false, message: `invalid YAML: ${err.message.split('\n')[0]!.replace(/:$/, '')}` };
    }
    return { ok: false, message: `invalid YAML: ${err instanceof Error ? err.message : String(err)}` };
  }
}
