import type { ConnectionType, EntityManager } from '@mikro-orm/postgresql';

/**
 * An entity manager that forks `root` on its first real use: the one `runRoute` gives each request. A request that
 * only runs statements (`sql()`, `prepared()`: they need the connection and, outside a transaction, nothing of a
 * fork) never pays for one. That is what the hot paths do (usage, effective access, a cached credential). A fork
 * builds a unit of work, an entity factory and a loader, and MikroORM 7 writes `process.env` twice in it (its
 * configuration's `set`): about 20 µs of CPU per request (`npm run bench`, docs/benchmarks.md).
 *
 * Until the fork exists, only these answer without one, as a fresh fork would: the connection and driver (shared
 * by every fork of one ORM), and "no transaction". Anything else forks, once, and goes to the fork (methods bound to
 * it, so MikroORM's private fields work). `onFork` is told when it forks (for tests).
 *
 * The handler and the unforked answers are built once, not per request: closures made per call cost more here
 * than the fork (the tsx loader names each one with `Object.defineProperty`).
 */
export function lazyFork(root: EntityManager, onFork?: () => void): EntityManager {
  // The target lends the prototype, so `instanceof EntityManager` holds, and carries the state.
  const target = Object.create(Object.getPrototypeOf(root) as object) as Lazy;
  target[STATE] = { root, fork: undefined, onFork };
  return new Proxy(target, handler) as unknown as EntityManager;
}

const STATE = Symbol('lazyFork');

interface Lazy {
  [STATE]: { root: EntityManager; fork: EntityManager | undefined; onFork: (() => void) | undefined };
}

function forked(target: Lazy): EntityManager {
  const state = target[STATE];
  if (!state.fork) {
    state.fork = state.root.fork();
    state.onFork?.();
  }
  return state.fork;
}

const unforked: Record<PropertyKey, (state: Lazy[typeof STATE]) => unknown> = {
  getConnection: (state) => (type?: ConnectionType) => state.root.getDriver().getConnection(type),
  getDriver: (state) => () => state.root.getDriver(),
  getTransactionContext: () => noTransaction,
  isInTransaction: () => notInTransaction,
};
const noTransaction = () => undefined;
const notInTransaction = () => false;

const handler: ProxyHandler<Lazy> = {
  get(target, prop) {
    const state = target[STATE];
    if (!state.fork && Object.hasOwn(unforked, prop)) return unforked[prop](state);
    const em = forked(target);
    const value: unknown = Reflect.get(em, prop, em);
    return typeof value === 'function' && prop !== 'constructor'
      ? (value as (...args: unknown[]) => unknown).bind(em)
      : value;
  },
  set: (target, prop, value) => Reflect.set(forked(target), prop, value),
  has: (target, prop) => prop in forked(target),
};
