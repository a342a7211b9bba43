import type { Database } from '@roster/db';
import { Redis } from 'ioredis';
import { redisUrl } from './learning-loop.js';

/** Every place in the database that holds one of the words: "table.column" → rows. */
export async function scanDatabase(database: Database, words: readonly string[]): Promise<Record<string, number>> {
  return database.ownerScope('test: scan every column that can hold text', async (tx) => {
    const { rows: columns } = await tx.query<{ table_name: string; column_name: string }>(
      `select c.table_name, c.column_name from information_schema.columns c
       join information_schema.tables t on t.table_name = c.table_name and t.table_schema = c.table_schema
       where c.table_schema = 'public' and t.table_type = 'BASE TABLE'
         and (c.data_type in ('text', 'character varying', 'json', 'jsonb', 'tsvector', 'ARRAY', 'USER-DEFINED'))`,
    );
    const found: Record<string, number> = {};
    for (const column of columns) {
      const { rows } = await tx.query<{ n: string }>(
        `select count(*) as n from ${column.table_name} where lower(${column.column_name}::text) similar to $1`,
        [`%(${words.join('|')})%`],
      );
      const count = Number(rows[0]!.n);
      if (count > 0) found[`${column.table_name}.${column.column_name}`] = count;
    }
    return found;
  });
}

/** Every Redis key under this prefix whose value holds one of the words. */
export async function scanRedis(prefix: string, words: readonly string[]): Promise<string[]> {
  const redis = new Redis(redisUrl);
  try {
    const keys = await redis.keys(`${prefix}:*`);
    const found: string[] = [];
    for (const key of keys) {
      const type = await redis.type(key);
      let text = '';
      if (type === 'string') text = (await redis.get(key)) ?? '';
      else if (type === 'hash') text = JSON.stringify(await redis.hgetall(key));
      else if (type === 'list') text = JSON.stringify(await redis.lrange(key, 0, -1));
      else if (type === 'set') text = JSON.stringify(await redis.smembers(key));
      else if (type === 'zset') text = JSON.stringify(await redis.zrange(key, 0, -1));
      else if (type === 'stream') text = JSON.stringify(await redis.xrange(key, '-', '+'));
      if (words.some((word) => text.toLowerCase().includes(word))) found.push(key);
    }
    return found;
  } finally {
    redis.disconnect();
  }
}

