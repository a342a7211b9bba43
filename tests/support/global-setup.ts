import { makeClusterTemplate } from '@roster/db/testing';

/** Once per run, before any test: the embedded cluster that test data folders start from (see `tempDataDir`). */
export default async function setup(): Promise<void> {
  await makeClusterTemplate();
}
