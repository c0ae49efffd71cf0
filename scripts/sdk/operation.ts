// One operation of the SDK: a route as the generators (TypeScript and Python) name and shape it. Its own file,
// below the generators, so that each language's generator can name it without importing the other.
import type { RouteDef } from '../../src/http/route.js';

/** The credentials of an app an SDK call may carry: S secret key, P publishable key, T account token. */
export type SdkCred = 'S' | 'P' | 'T';

export interface SdkOperation {
  route: RouteDef;
  key: string;
  name: string;
  namespace: string;
  method: string;
  /** OpenAPI path (`{appId}`). */
  path: string;
  pathParams: string[];
  creds: SdkCred[];
  body: 'none' | 'optional' | 'required';
  query: 'none' | 'optional' | 'required';
  /** `page`: a `page` / `per_page` list; `cursor`: a `limit` / `cursor` list; false: not a list. */
  paginated: false | 'page' | 'cursor';
  status: number;
}
