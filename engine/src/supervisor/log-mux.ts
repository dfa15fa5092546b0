/**
 * One log stream for the node: every line a child writes is passed on whole, tagged with the
 * child's name (JSON records get a `worker` field, other lines a `[name] ` prefix). A partial
 * last line waits for its end, so lines from two children never interleave.
 */
import type { Readable } from 'node:stream';
import { createInterface } from 'node:readline';

export function tagLine(name: string, line: string): string {
  if (line.startsWith('{')) {
    try {
      const rec = JSON.parse(line) as Record<string, unknown>;
      // The node's "listening" record is the supervisor's (the public ports); a worker's is not.
      if (rec['msg'] === 'listening') rec['msg'] = 'worker listening';
      return JSON.stringify({ ...rec, worker: name });
    } catch {
      /* not a JSON record after all */
    }
  }
  return `[${name}] ${line}`;
}

export function pipeLines(
  name: string,
  stream: Readable,
  write: (line: string) => void,
  onLine?: (line: string) => void,
): void {
  createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
    onLine?.(line);
    write(tagLine(name, line) + '\n');
  });
}
