/**
 * What a token may do to a model, and, when it may not, why: the console shows the reason next to
 * a disabled action instead of hiding the fact that the action exists (viewers see no actions).
 */
import type { ModelAction, ModelSummary, Scope, Session } from '../api/types.js';
import { allows } from './session.js';

export interface Verdict {
  readonly allowed: boolean;
  readonly whyNot: string | null;
}

const ok: Verdict = { allowed: true, whyNot: null };
const no = (whyNot: string): Verdict => ({ allowed: false, whyNot });

export function modelActionVerdict(
  action: ModelAction,
  model: Pick<ModelSummary, 'state' | 'resident' | 'pin'>,
  session: Pick<Session, 'scope' | 'controlMode'> | undefined,
): Verdict {
  if (!session || !allows(session.scope, 'operator')) return no('needs an operator or admin token');
  const loadUnload = action === 'load' || action === 'unload';
  if (loadUnload && session.controlMode === 'static') return no('static mode: the repository decides what is loaded');
  if (model.state === 'failed' && action !== 'reload') return no('the model failed to load: reload it');
  switch (action) {
    case 'load':
      return model.resident === 'device' ? no('already resident on the device') : ok;
    case 'unload':
      if (model.pin !== 'unpinned') return no('pinned: unpin it first');
      return model.resident === 'none' ? no('not resident') : ok;
    case 'reload':
      return ok;
    case 'pin':
      return model.pin === 'device' ? no('already pinned') : ok;
    case 'unpin':
      return model.pin === 'unpinned' ? no('not pinned') : ok;
  }
}

export function canManageTokens(scope: Scope | undefined): boolean {
  return allows(scope, 'admin');
}

export function canOperate(scope: Scope | undefined): boolean {
  return allows(scope, 'operator');
}
