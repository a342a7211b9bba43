import { until } from '@roster/channels/testing';

/** A platform stand-in as far as the replies go: what the bot sent, to which chat. */
interface SentLog {
  sent(): ReadonlyArray<{ chatId: string; text: string }>;
}

/** The texts sent to `chatId`, once there are at least `count` of them (waited for, up to `timeoutMs`). */
export async function repliesIn(fake: SentLog, chatId: string, count: number, timeoutMs = 60_000): Promise<string[]> {
  await until(() => fake.sent().filter((message) => message.chatId === chatId).length >= count, `${count} messages to ${chatId}`, timeoutMs);
  return fake
    .sent()
    .filter((message) => message.chatId === chatId)
    .map((message) => message.text);
}
