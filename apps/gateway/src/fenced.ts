import { ChannelError, type ChannelAdapter } from '@roster/channels';

/**
 * The adapter with its sends fenced: once this process may no longer be the
 * account's holder (its lease not renewed in time), nothing more is sent.
 */
export function fenced(adapter: ChannelAdapter, holds: () => boolean): ChannelAdapter {
  const check = () => {
    if (!holds()) throw new ChannelError('failed', `this gateway no longer holds the ${adapter.channel} bot account: another one serves it now`);
  };
  return {
    channel: adapter.channel,
    account: adapter.account,
    capabilities: adapter.capabilities,
    start: (options) => adapter.start(options),
    stop: () => adapter.stop(),
    async sendText(target, text) {
      check();
      return adapter.sendText(target, text);
    },
    async editText(target, messageId, text) {
      check();
      return adapter.editText(target, messageId, text);
    },
    async sendApproval(target, approval) {
      check();
      return adapter.sendApproval(target, approval);
    },
    async sendTyping(target) {
      check();
      return adapter.sendTyping(target);
    },
  };
}
