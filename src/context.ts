import type { EntityManager } from '@mikro-orm/postgresql';
import type { IApp } from './apps/apps.entities.js';
import type { Deps } from './deps.js';

/** What a domain service needs: a fresh entity manager, the process dependencies, and the app. */
export interface Ctx {
  em: EntityManager;
  deps: Deps;
  app: IApp;
}
