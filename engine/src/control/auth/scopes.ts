/** Token scopes, each allowing what the ones before it allow. */
export const SCOPES = ['viewer', 'operator', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s);

export const allows = (held: Scope, needed: Scope): boolean => SCOPES.indexOf(held) >= SCOPES.indexOf(needed);

/** Who made a request: the audit log's actor is `token:<id>` (or `setup` / `system`). */
export interface Principal {
  readonly actor: string;
  readonly tokenId: string | null;
  readonly name: string;
  readonly scope: Scope;
}
