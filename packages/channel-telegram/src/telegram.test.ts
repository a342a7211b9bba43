import { describeChannelConformance } from '@roster/channel-host/conformance';
import { startFakeTelegram } from './fake-telegram.js';

describeChannelConformance('telegram', { start: () => startFakeTelegram() });
describeChannelConformance('telegram (webhook)', { start: () => startFakeTelegram({ webhook: true }) });
