import type { CompiledSpec, SpecError } from './route-spec.js';
import type { CompiledSelector } from './selector.js';

type ValueSpec = CompiledSpec & { readonly selector: CompiledSelector };

const isValueSpec = (spec: CompiledSpec): spec is ValueSpec => spec.selector !== undefined;

/** Same steps of the same types: `['a', 0]` reads an array element, `['a', '0']` an object's key. */
function sameSteps(a: readonly (string | number)[], b: readonly (string | number)[]): boolean {
  return a.length === b.length && a.every((step, i) => step === b[i]);
}

/** A spec as the route author wrote its selector: `body "to.x"`, `body ["to","x"]`. */
const written = ({ source, selector }: ValueSpec): string =>
  `${source} ${JSON.stringify(selector.key ?? selector.steps)}`;

/**
 * A source's record in `request.pathgate` is keyed by the selectors' text,
 * so `{ body: 'to.x' }` and `{ body: ['to', 'x'] }` share the key `to.x`
 * though they select different values: one path would overwrite the other,
 * and the handler could not tell which value it holds. So can one selector
 * joined under two folders (`under`). Such a pair fails the build, naming
 * both specs; a spec that repeats another exactly may stay.
 */
export function checkRecordKeys(specs: readonly CompiledSpec[], fail: SpecError): void {
  const firstByLabel = new Map<string, { index: number; spec: ValueSpec }>();
  specs.forEach((spec, index) => {
    if (!isValueSpec(spec)) return;
    const first = firstByLabel.get(spec.label);
    if (first === undefined) {
      firstByLabel.set(spec.label, { index, spec });
      return;
    }
    const sameValue = sameSteps(first.spec.selector.steps, spec.selector.steps);
    if (sameValue && first.spec.under === spec.under) return;
    const key = `${spec.source}[${JSON.stringify(spec.selector.label)}]`;
    const differ = sameValue
      ? 'join the same value under different folders'
      : 'select different values';
    fail(
      `paths[${first.index}] (${written(first.spec)}) and paths[${index}] (${written(spec)}) ${differ} but share the key ${key} in request.pathgate`,
    );
  });
}
