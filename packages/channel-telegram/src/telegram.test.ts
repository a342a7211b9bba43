import { describeChannelConformance } from '@roster/channels/conformance';
import { startFakeTelegram } from './fake-telegram.js';

describeChannelConformance('telegram', { start: () => startFakeTelegram() });
describeChannelConformance('telegram (webhook)', { start: () => startFakeTelegram({ webhook: true }) });
