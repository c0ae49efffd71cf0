import { expect } from 'chai';
import { post } from './http.js';
import { testEnv } from './servers.js';

export interface TestApp {
  id: string;
  name: string;
  api_key: string;
  public_key: string;
}

let n = 0;

/** A fresh app (tenant) per test, so tests never see each other's records. */
export async function createTestApp(name = `Test app ${++n}`): Promise<TestApp> {
  const res = await post<TestApp>('/apps', testEnv().adminKey, { name });
  expect(res.status, res.text).to.equal(201);
  return res.body;
}
