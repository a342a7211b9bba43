import { describeChannelConformance } from '@roster/channels/conformance';
import { startFakeSlack } from './fake-slack.js';

describeChannelConformance('slack', { start: () => startFakeSlack() });
