// Linearizability of a batch of requests sent at once (examples-concurrent.test.ts):
// the serial orders of the batch whose answers, run one at a time on the
// model, are the answers the server gave.
import { isDeepStrictEqual } from 'node:util';
import type { Observed, SandboxModel } from './examples-model.js';

/** A request of a batch, as the model runs it. */
export interface Modelled {
  /** Its answer, and what it does. */
  modelled: (model: SandboxModel) => Observed;
  /**
   * What it does ahead of its answer, at any point before it: the folders a
   * move or an upload makes before its file arrives, taken back (those
   * still empty) should it then fail.
   */
  ahead?: (model: SandboxModel) => string[];
  /**
   * A move's `ahead` that also links its file to the new name, taken back
   * should its source go meanwhile (a 404): tried in place of `ahead` for
   * a request answered 404.
   */
  linked?: (model: SandboxModel) => string[];
}

/** One step of a serial order: request `index`'s `ahead`, or its answer. */
interface Event {
  index: number;
  ahead: boolean;
}

/** Every order of `items` (n! of them). */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  );
}

/** A serial order of a batch's events, and the model as that order leaves it. */
export interface SerialOrder {
  order: Event[];
  model: SandboxModel;
}

/** Every order of the batch's events in which each request's `ahead` comes before its answer. */
function eventOrders(batch: readonly Modelled[]): Event[][] {
  const events = batch.flatMap((request, index) => [
    ...(request.ahead === undefined ? [] : [{ index, ahead: true }]),
    { index, ahead: false },
  ]);
  return permutations(events).filter((order) =>
    order.every(
      (event, at) =>
        event.ahead || !order.slice(at).some((e) => e.ahead && e.index === event.index),
    ),
  );
}

/** Runs `order` on `model`: whether each request's answer is `answers`' at its index. */
function answersAlike(
  model: SandboxModel,
  batch: readonly Modelled[],
  answers: readonly Observed[],
  order: readonly Event[],
): boolean {
  const made = new Map<number, string[]>();
  return order.every(({ index, ahead }) => {
    const request = batch[index] as Modelled;
    if (ahead) {
      made.set(index, request.ahead?.(model) ?? []);
      return true;
    }
    const answer = request.modelled(model);
    if (answer.status >= 400) model.takeBack(made.get(index) ?? []);
    return isDeepStrictEqual(answer, answers[index]);
  });
}

/**
 * The serial orders of `batch`'s events, each run on a copy of `start`, in
 * which each request's modelled answer is `answers`' at its index.
 */
export function serialOrders(
  start: SandboxModel,
  batch: readonly Modelled[],
  answers: readonly Observed[],
): SerialOrder[] {
  const orders = eventOrders(batch);
  return variants(batch, answers).flatMap((variant) =>
    orders.flatMap((order) => {
      const model = start.clone();
      return answersAlike(model, variant, answers, order) ? [{ order, model }] : [];
    }),
  );
}

/** The batch as is, and with each request answered 404 that has a `linked` ahead taking it, in every combination. */
function variants(batch: readonly Modelled[], answers: readonly Observed[]): Modelled[][] {
  return batch.reduce<Modelled[][]>(
    (made, request, index) =>
      made.flatMap((prefix) => {
        const { linked } = request;
        const linking = linked !== undefined && answers[index]?.status === 404;
        return [
          [...prefix, request],
          ...(linking ? [[...prefix, { ...request, ahead: linked }]] : []),
        ];
      }),
    [[]],
  );
}
