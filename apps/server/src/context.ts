import type { Config, InstallationKey, Logger } from '@roster/config';
import type { Database } from '@roster/db';
import type { Runtime } from '@roster/runtime';
import type { ApiRoutes } from './api.js';

/** What every group of routes is built from. */
export interface RouteContext {
  config: Config;
  database: Database;
  runtime: Runtime;
  logger: Logger;
  routes: ApiRoutes;
  /** Opens what is stored sealed. */
  key: InstallationKey;
}
