import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { newId } from '../ids.js';
import { iso } from '../time.js';
import { App, type IApp } from './apps.entities.js';
import type { appSchema, createAppBody, updateAppBody } from './apps.schemas.js';

export function presentApp(app: IApp): z.input<typeof appSchema> {
  return {
    id: app.id,
    name: app.name,
    plan: app.plan ?? null,
    api_key: app.apiKey,
    public_key: app.publicKey,
    checkout_url: app.checkoutUrl ?? null,
    created_at: iso(app.createdAt)!,
  };
}

export async function createApp(em: EntityManager, input: z.output<typeof createAppBody>): Promise<IApp> {
  const app = em.create(App, {
    id: newId('app'),
    name: input.name,
    plan: input.plan ?? null,
    apiKey: newId('secretKey'),
    publicKey: newId('publicKey'),
    checkoutUrl: null,
  });
  await em.flush();
  return app;
}

/** The managed entity of an app the request already identified (auth reads a plain record). */
async function entityOf(em: EntityManager, app: IApp): Promise<IApp> {
  return em.findOneOrFail(App, { id: app.id });
}

export async function updateApp(em: EntityManager, record: IApp, input: z.output<typeof updateAppBody>): Promise<IApp> {
  const app = await entityOf(em, record);
  if (input.name !== undefined) app.name = input.name;
  if (input.plan !== undefined) app.plan = input.plan;
  if (input.checkout_url !== undefined) app.checkoutUrl = input.checkout_url;
  await em.flush();
  return app;
}

/** Deletes the app; every table it owns references it with ON DELETE CASCADE. */
export async function deleteApp(em: EntityManager, app: IApp): Promise<void> {
  await em.nativeDelete(App, { id: app.id });
}

/** A new secret key; the old one and every account token signed with it stop working at once. */
export async function regenerateSecretKey(em: EntityManager, record: IApp): Promise<string> {
  const app = await entityOf(em, record);
  app.apiKey = newId('secretKey');
  await em.flush();
  return app.apiKey;
}

export async function regeneratePublicKey(em: EntityManager, record: IApp): Promise<string> {
  const app = await entityOf(em, record);
  app.publicKey = newId('publicKey');
  await em.flush();
  return app.publicKey;
}
