/**
 * What a token may do to a model and, when it may not, why: a refused action stays visible,
 * disabled, with its reason beside it. A viewer sees no actions at all.
 */
import type { ModelAction, ModelView, Scope } from '../api/types.js';
import { allows } from './session.js';

export interface Verdict {
  readonly allowed: boolean;
  readonly whyNot: string | null;
}

const ok: Verdict = { allowed: true, whyNot: null };
const no = (whyNot: string): Verdict => ({ allowed: false, whyNot });

export function modelActionVerdict(
  action: ModelAction,
  model: Pick<ModelView, 'state' | 'residency' | 'policy' | 'drain'>,
  scope: Scope | undefined,
  controlMode: string | undefined,
): Verdict {
  if (!allows(scope, 'operator')) return no('needs an operator or admin token');
  if ((action === 'load' || action === 'unload') && controlMode === 'static')
    return no('static mode: the repository decides what is loaded');
  const floor = model.residency?.floor ?? model.policy?.residency ?? 'unpinned';
  const busy = model.state === 'LOADING' || model.state === 'UNLOADING';
  switch (action) {
    case 'load':
      if (busy) return no(`${model.state.toLowerCase()} now`);
      return model.state === 'READY' ? no('already loaded') : ok;
    case 'unload':
      if (busy) return no(`${model.state.toLowerCase()} now`);
      if (model.state !== 'READY') return no('not loaded');
      return floor === 'device' ? no('pinned on the device: unpin it first') : ok;
    case 'reload':
      return model.state === 'READY' ? ok : no('not loaded');
    case 'drain':
      if (model.drain) return no('already drained');
      return model.state === 'READY' ? ok : no('not loaded');
    case 'resume':
      return model.drain ? ok : no('not drained');
    case 'pin':
      return floor === 'device' ? no('already pinned on the device') : ok;
    case 'unpin':
      return floor === 'unpinned' ? no('not pinned') : ok;
  }
}

/** Changing the weight budget: admins only (it is a node setting), and only to a new value. */
export function budgetVerdict(scope: Scope | undefined, current: number | null, next: number | null): Verdict {
  if (!allows(scope, 'admin')) return no('the budget is a node setting: needs an admin token');
  if (next === null || !Number.isInteger(next) || next < 0) return no('enter a whole number of bytes, 0 or more');
  return next === current ? no('that is the budget now') : ok;
}

export const canOperate = (scope: Scope | undefined): boolean => allows(scope, 'operator');
export const canManageTokens = (scope: Scope | undefined): boolean => allows(scope, 'admin');

/** Putting a kept version back: operators, outside static mode, one at a time. */
export function rollbackVerdict(scope: Scope | undefined, controlMode: string | undefined, busy: boolean): Verdict {
  if (!allows(scope, 'operator')) return no('needs an operator or admin token');
  if (controlMode === 'static') return no('static mode: the repository is read at start only');
  return busy ? no('a rollback is running') : ok;
}

/** Sending the reference input: operators, to a model with a version serving. */
export function tryVerdict(model: Pick<ModelView, 'state'>, scope: Scope | undefined): Verdict {
  if (!allows(scope, 'operator')) return no('needs an operator or admin token');
  return model.state === 'READY' ? ok : no(`the model is ${model.state.toLowerCase()}, not ready`);
}
