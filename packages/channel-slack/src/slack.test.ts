import { describeChannelConformance } from '@roster/channel-host/conformance';
import { startFakeSlack } from './fake-slack.js';

describeChannelConformance('slack', { start: () => startFakeSlack() });
