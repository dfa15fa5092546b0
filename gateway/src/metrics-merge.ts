/**
 * Merges Prometheus text expositions: the gateway's own and each worker's, every worker sample
 * labelled worker="<name>". Samples of one family stay together under one HELP/TYPE, as the
 * text format requires.
 */

interface Family {
  help: string | null;
  type: string | null;
  samples: string[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?(\s.*)$/;

/** The family a sample belongs to: histogram and summary parts fold into their base name. */
function familyOf(metric: string, families: Map<string, Family>): string {
  for (const suffix of ['_bucket', '_sum', '_count', '_total', '_created']) {
    if (metric.endsWith(suffix)) {
      const base = metric.slice(0, -suffix.length);
      if (families.has(base)) return base;
    }
  }
  return metric;
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

export function mergeExpositions(parts: readonly { text: string; worker: string | null }[]): string {
  const families = new Map<string, Family>();
  const fam = (name: string): Family => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { help: null, type: null, samples: [] }));
    return f;
  };
  for (const { text, worker } of parts) {
    for (const line of text.split('\n')) {
      if (line === '') continue;
      if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
        const rest = line.slice(7);
        const sp = rest.indexOf(' ');
        const name = sp < 0 ? rest : rest.slice(0, sp);
        const f = fam(name);
        if (line[2] === 'H') f.help ??= line;
        else f.type ??= line;
        continue;
      }
      if (line.startsWith('#')) continue;
      const m = SAMPLE.exec(line);
      if (!m) continue;
      const [, name, labels, value] = m as unknown as [string, string, string | undefined, string];
      let out = line;
      if (worker !== null) {
        const l = `worker="${escapeLabel(worker)}"`;
        out = labels && labels.length > 2 ? `${name}{${l},${labels.slice(1)}${value}` : `${name}{${l}}${value}`;
      }
      fam(familyOf(name, families)).samples.push(out);
    }
  }
  const lines: string[] = [];
  for (const f of families.values()) {
    if (f.samples.length === 0) continue;
    if (f.help) lines.push(f.help);
    if (f.type) lines.push(f.type);
    lines.push(...f.samples);
  }
  return lines.join('\n') + '\n';
}
